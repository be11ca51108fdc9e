package tracing_test

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/methods"
	"github.com/toolgate/toolgate/tracing"
)

// discard is an exporter that keeps nothing, so that "on" measures making
// the spans, not storing them.
type discard struct{ tracetest.NoopExporter }

// BenchmarkCallSpans is the span tree of one tools/call (request, a hook's
// two halves, the method) around a handler that does
// nothing: off is the cost of tracing's presence, on its full cost.
func BenchmarkCallSpans(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "off"
		opts := tracing.Options{Getenv: noEnv}
		if on {
			name, opts.Exporter = "on", &discard{}
		}
		b.Run(name, func(b *testing.B) {
			tr, err := tracing.New(context.Background(), opts)
			if err != nil {
				b.Fatal(err)
			}
			defer tr.Shutdown(context.Background())
			hook := tr.WrapHook(hooks.Hook{Name: "ledger",
				Before: func(context.Context, *hooks.CallContext) (hooks.Verdict, error) {
					return hooks.Allow(), nil
				},
				After: func(context.Context, *hooks.CallContext, *hooks.Record) error { return nil },
			})
			ms := tr.WrapMethods(methods.Map{"demo.getReward": fakeMethod{res: &mcp.CallToolResult{}}})
			h := tr.Middleware(nil)(pipeline(hook, ms))
			req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "getReward", Meta: mcp.Meta{"traceparent": traceparent}}}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := h(ctx, "tools/call", req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
