package upstream

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// traceMeta is the _meta that continues the call's trace at the upstream
// (W3C traceparent and tracestate, as the OpenTelemetry MCP conventions
// propagate it), or nil when the call is not traced.
func traceMeta(ctx context.Context) mcp.Meta {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return nil
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	m := make(mcp.Meta, len(c))
	for k, v := range c {
		m[k] = v
	}
	return m
}
