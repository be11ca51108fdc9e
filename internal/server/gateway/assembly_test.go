package gateway_test

import (
	"context"
	"net"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/example/demo"
	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/server/gateway"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/toolcall"
	"github.com/toolgate/toolgate/tracing"
)

// callSpanNames calls a row's tool and a name no row has through cs and
// returns nothing: the spans go to the OTLP sink of the server behind cs.
func callSpanNames(t *testing.T, ctx context.Context, cs *mcp.ClientSession, absent string) {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "add", Arguments: map[string]any{"a": 1, "b": 2}})
	require.NoError(t, err)
	require.False(t, res.IsError)
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: absent, Arguments: map[string]any{}})
	require.NoError(t, err)
	require.Equal(t, "Error: Unknown tool '"+absent+"'.", res.Content[0].(*mcp.TextContent).Text)
}

// TestOneAssembly: the front door (toolgate.New) and the binary's settings
// (gateway.New, what `toolgate serve` runs) build their governed server
// through one assembly. Both install the same receiving middleware in the
// same order, and keep the same span-name rule: a tools/call span names
// the tool only when a row has the name, so a client cannot mint span
// names.
func TestOneAssembly(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	ops := &toolcall.Caller{Subject: "ops", Roles: []string{"manager", "reader"}}

	// The front door, traced to its own OTLP sink.
	frontSinks := newObserveSinks(t)
	tr, err := tracing.New(ctx, tracing.Options{Endpoint: frontSinks.otlp.URL, Getenv: func(string) string { return "" }})
	require.NoError(t, err)
	front, err := toolgate.New(ctx, toolgate.Options{Methods: demo.Methods(), Caller: mcpadapter.StaticCaller(ops), Tracer: tr})
	require.NoError(t, err)
	ct, st := mcp.NewInMemoryTransports()
	served := make(chan error, 1)
	go func() { served <- front.Serve(ctx, st) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, ct, nil)
	require.NoError(t, err)
	callSpanNames(t, ctx, cs, "frontDoorNoRow")
	require.NoError(t, cs.Close())
	<-served
	require.NoError(t, front.Close())
	require.NoError(t, tr.Shutdown(ctx)) // exports the spans

	// The binary's settings, traced to another sink.
	dir := t.TempDir()
	binSinks := newObserveSinks(t)
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	ready := make(chan net.Addr, 1)
	g, err := gateway.New(runCtx, gateway.Config{Serve: config.Serve{
		HTTP: "127.0.0.1:0", Tokens: writeTokens(t, dir, ops), Ledger: "memory", Audit: filepath.Join(dir, "audit.jsonl"), Tracing: tracing.Settings{Endpoint: binSinks.otlp.URL},
	}, Ready: func(a net.Addr) { ready <- a }})
	require.NoError(t, err)
	ran := make(chan error, 1)
	go func() { ran <- g.Run(runCtx) }()
	addr := <-ready
	cs = connect(t, ctx, "http://"+addr.String()+"/mcp", protocols[len(protocols)-1], ops)
	callSpanNames(t, ctx, cs, "binaryNoRow")
	require.NoError(t, cs.Close())
	binLayers := g.Server().Layers()
	stop()
	require.NoError(t, <-ran)
	require.NoError(t, g.Close()) // exports the spans

	require.Equal(t, []string{mcpadapter.LayerWire, toolgate.LayerTracing, mcpadapter.LayerGovernance}, front.Layers())
	require.Equal(t, front.Layers(), binLayers, "the same middleware in the same order")

	for name, sinks := range map[string]*observeSinks{"front door": frontSinks, "binary": binSinks} {
		sinks.mu.Lock()
		require.Contains(t, sinks.spans, "tools/call add", "%s: a row's tool names its span (spans: %v)", name, sinks.spans)
		require.Contains(t, sinks.spans, "tools/call", "%s: a name no row has makes a span without it (spans: %v)", name, sinks.spans)
		for span := range sinks.spans {
			require.NotContains(t, span, "NoRow", "%s: a span named after a name no row has", name)
		}
		sinks.mu.Unlock()
	}
}
