package mcpadapter_test

import (
	"context"
	"fmt"
	"io/fs"
	"testing"
	"testing/fstest"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/example/demo"
	"github.com/toolgate/toolgate/internal/testkit/benchdata"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/toolcall"
)

// benchRegistry generates a registry of n rows, each described
// (internal/testkit/benchdata).
func benchRegistry(n int) string { return benchdata.Registry(n, true) }

// benchEngine loads a generated registry of n rows with the bundled grant
// policy (cacheable: it reads the caller's roles and the rows) and, with
// callRules, the bundled call rules too.
func benchEngine(b *testing.B, n int, callRules bool, opts ...engine.Option) *engine.Engine {
	b.Helper()
	fsys := fstest.MapFS{"registry.yaml": {Data: []byte(benchRegistry(n))}}
	files := []string{"grant.rego"}
	if callRules {
		files = append(files, "call.rego")
	}
	for _, name := range files {
		data, err := fs.ReadFile(toolgate.ExamplePolicies(), name)
		require.NoError(b, err)
		fsys["policies/"+name] = &fstest.MapFile{Data: data}
	}
	eng, err := engine.New(context.Background(), engine.Source{FS: fsys, Registry: "registry.yaml", Policies: "policies"}, opts...)
	require.NoError(b, err)
	ok, why := eng.Current().DecisionMode()
	require.True(b, ok, why)
	return eng
}

// contractor sees an override: the read-only rows the base decision grants.
var contractor = &toolcall.Caller{Subject: "cid", Roles: []string{"manager", "contractor"}}

func BenchmarkList(b *testing.B) {
	for _, n := range []int{1000} {
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) {
			eng := benchEngine(b, n, false)
			a := mcpadapter.New(mcpadapter.Options{Revisions: eng, Methods: demo.Methods(), Caller: mcpadapter.StaticCaller(contractor)})
			ctx := context.Background()
			req := &mcp.ListToolsRequest{Params: &mcp.ListToolsParams{}}
			res := a.List(ctx, req) // warm: the decision and the listing
			want := len(eng.Current().Grant(ctx, contractor, engine.Request{Method: engine.MethodList}).VisibleRows())
			require.Len(b, res.Tools, want)
			require.Greater(b, want, n/10)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				res = a.List(ctx, req)
			}
			require.Len(b, res.Tools, want)
		})
	}
}

// BenchmarkToolsCallRoundTrip measures one tools/call of demo.echo from a
// go-sdk client over in-memory transports: through toolgate (1 000 rows,
// the bundled grant policy, no call rules) and through a plain go-sdk
// server whose echo tool is added with mcp.AddTool.
func BenchmarkToolsCallRoundTrip(b *testing.B) {
	b.Run("governed", func(b *testing.B) {
		benchRoundTrip(b, governedServer(b, false))
	})
	b.Run("ungoverned", func(b *testing.B) {
		benchRoundTrip(b, ungovernedServer())
	})
}

// BenchmarkToolsCallRoundTripCallRules is the governed round trip with the
// bundled toolgate.call rules, which read _meta and so are evaluated per
// call.
func BenchmarkToolsCallRoundTripCallRules(b *testing.B) {
	benchRoundTrip(b, governedServer(b, true))
}

func governedServer(b *testing.B, callRules bool) func(context.Context, mcp.Transport) (*mcp.ServerSession, error) {
	eng := benchEngine(b, 1000, callRules)
	a := mcpadapter.New(mcpadapter.Options{Revisions: eng, Methods: demo.Methods(), Caller: mcpadapter.StaticCaller(contractor)})
	s := a.NewServer(&mcp.Implementation{Name: "toolgate", Version: "bench"}, nil)
	return func(ctx context.Context, t mcp.Transport) (*mcp.ServerSession, error) {
		return s.Connect(ctx, mcpadapter.WrapTransport(t), nil)
	}
}

func ungovernedServer() func(context.Context, mcp.Transport) (*mcp.ServerSession, error) {
	s := benchdata.BareServer()
	return func(ctx context.Context, t mcp.Transport) (*mcp.ServerSession, error) { return s.Connect(ctx, t, nil) }
}

func benchRoundTrip(b *testing.B, connect func(context.Context, mcp.Transport) (*mcp.ServerSession, error)) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := connect(ctx, st)
	require.NoError(b, err)
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, ct, nil)
	require.NoError(b, err)
	defer cs.Close()
	params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello"}}
	check := func() {
		res, err := cs.CallTool(ctx, params)
		require.NoError(b, err)
		require.False(b, res.IsError, "%+v", res.Content)
		require.Equal(b, "hello", res.Content[0].(*mcp.TextContent).Text)
	}
	check() // warm
	b.ReportAllocs()
	b.ResetTimer()
	cpu := benchdata.MeasureCPU(b)
	for b.Loop() {
		if _, err := cs.CallTool(ctx, params); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	cpu()
	check()
}
