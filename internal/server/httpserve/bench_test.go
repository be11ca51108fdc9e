package httpserve_test

import (
	"context"
	"net"
	"net/http"
	"testing"
	"testing/fstest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/example/demo"
	"github.com/toolgate/toolgate/identity"
	"github.com/toolgate/toolgate/internal/server/httpserve"
	"github.com/toolgate/toolgate/internal/testkit/benchdata"
	"github.com/toolgate/toolgate/mcpadapter"
)

// BenchmarkHTTPCall is one tools/call of echo from a go-sdk client over
// loopback HTTP, per protocol revision (2025-11-25 has sessions,
// 2026-07-28 has none), through:
//
//   - bare: the bare go-sdk server (internal/testkit/benchdata) behind the SDK's
//     streamable handlers, dispatched by revision as httpserve does;
//   - served: the same bare server behind httpserve.Server with a tokens
//     file: what the HTTP layer alone adds;
//   - governed: toolgate's adapter (1 000 rows, the memoised grant policy)
//     behind httpserve.Server.
//
// Allocations include the client's, the same on every line.
func BenchmarkHTTPCall(b *testing.B) {
	for _, rev := range []string{"2025-11-25", "2026-07-28"} {
		b.Run("bare/"+rev, func(b *testing.B) {
			benchHTTPCall(b, rev, func(ln net.Listener) {
				mux := http.NewServeMux()
				mux.Handle("/mcp", benchdata.BareHTTP(benchdata.BareServer()))
				hs := &http.Server{Handler: mux}
				go func() { _ = hs.Serve(ln) }()
				b.Cleanup(func() { _ = hs.Close() })
			})
		})
		b.Run("served/"+rev, func(b *testing.B) {
			benchHTTPCall(b, rev, func(ln net.Listener) {
				serveBench(b, func(transport []mcpadapter.Layer) *mcp.Server {
					srv := benchdata.BareServer()
					ms := make([]mcp.Middleware, len(transport))
					for i, l := range transport {
						ms[i] = l.Middleware
					}
					srv.AddReceivingMiddleware(ms...)
					return srv
				}, ln)
			})
		})
		b.Run("governed/"+rev, func(b *testing.B) {
			fsys := fstest.MapFS{"registry.yaml": {Data: []byte(benchdata.Registry(1000, false))}, "policies/grant.rego": {Data: []byte(benchdata.Memoised)}}
			eng, err := engine.New(context.Background(), engine.Source{FS: fsys, Registry: "registry.yaml", Policies: "policies"}, engine.WithTimeout(time.Minute))
			require.NoError(b, err)
			a := mcpadapter.New(mcpadapter.Options{Revisions: eng, Methods: demo.Methods(), Caller: httpserve.CallerFromRequest})
			benchHTTPCall(b, rev, func(ln net.Listener) {
				serveBench(b, func(transport []mcpadapter.Layer) *mcp.Server {
					srv, _ := a.NewServerWith(&mcp.Implementation{Name: "toolgate", Version: "bench"}, nil, mcpadapter.Layers{Transport: transport})
					return srv
				}, ln)
			})
		})
	}
}

const benchToken = "bench-token"

// serveBench serves the server build makes behind httpserve.Server on ln,
// with a tokens file that knows benchToken, until the benchmark ends.
func serveBench(b *testing.B, build func([]mcpadapter.Layer) *mcp.Server, ln net.Listener) {
	tok, err := identity.NewTokens(map[string]identity.TokenEntry{
		identity.HashToken(benchToken): {Subject: "cid", Roles: []string{"manager", "contractor"}},
	})
	require.NoError(b, err)
	s := httpserve.New(httpserve.Options{MCPServer: build, Tokens: tok})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln, nil) }()
	b.Cleanup(func() {
		cancel()
		<-done
	})
}

// benchHTTPCall serves with serve on a loopback listener, connects a
// client under protocol revision rev (and checks it was negotiated), then
// calls echo once per iteration.
func benchHTTPCall(b *testing.B, rev string, serve func(net.Listener)) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	serve(ln)
	ctx := context.Background()
	c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:   "http://" + ln.Addr().String() + "/mcp",
		HTTPClient: &http.Client{Transport: newBearer(benchToken)},
	}, &mcp.ClientSessionOptions{ProtocolVersion: rev})
	require.NoError(b, err)
	defer cs.Close()
	require.Equal(b, rev, cs.InitializeResult().ProtocolVersion)
	params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello"}, Meta: mcp.Meta{"festi/runId": "r-1"}}
	call := func() {
		res, err := cs.CallTool(ctx, params)
		require.NoError(b, err)
		require.False(b, res.IsError)
		require.Len(b, res.Content, 1)
		require.Equal(b, "hello", res.Content[0].(*mcp.TextContent).Text)
	}
	call() // warm: the decision, the connection
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		call()
	}
}
