package upstream

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolgate/toolgate/tracing"
)

// An upstream tool's method span is a client span named after the tool.
func TestMethodNamesItsUpstreamTool(t *testing.T) {
	t.Parallel()
	var m tracing.Upstream = &method{tool: "search"}
	if m.UpstreamTool() != "search" {
		t.Fatalf("UpstreamTool() = %q", m.UpstreamTool())
	}
}

// A traced call carries its trace to the upstream in _meta; an untraced
// one carries none (the SDK's own protocol entries aside).
func TestCallCarriesTheTraceInMeta(t *testing.T) {
	t.Parallel()
	srv := mcp.NewServer(&mcp.Implementation{Name: "meta", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "meta", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			b, _ := json.Marshal(req.Params.Meta)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil
		})
	p := newPool(t, Config{Name: "m", Timeout: 5 * time.Second, Transport: func() mcp.Transport {
		ct, st := mcp.NewInMemoryTransports()
		if _, err := srv.Connect(context.Background(), st, nil); err != nil {
			panic(err)
		}
		return ct
	}})
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	traced := trace.ContextWithSpanContext(t.Context(),
		trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled}))
	res, err := call(traced, t, p, "upstream:m/meta", nil)
	require.NoError(t, err)
	var meta map[string]any
	require.NoError(t, json.Unmarshal([]byte(textOf(t, res)), &meta))
	require.Equal(t, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", meta["traceparent"])
	res, err = call(t.Context(), t, p, "upstream:m/meta", nil)
	require.NoError(t, err)
	meta = nil
	require.NoError(t, json.Unmarshal([]byte(textOf(t, res)), &meta))
	require.NotContains(t, meta, "traceparent")
}
