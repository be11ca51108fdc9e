package toolgate_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/example/demo"
	"github.com/toolgate/toolgate/internal/wire"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/toolcall"
)

// TestFurtherMCPServersShareTheServer: a second MCP server of one Server
// (the binary's stdio beside its HTTP) has its own callers and everything
// else in common: the same layers, one audit trail, and a reload tells the
// sessions of both whose listing changed.
func TestFurtherMCPServersShareTheServer(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a failure bound only
	defer cancel()
	srv, reg, trail := newAuditedServer(ctx, t)
	other := toolgate.CoreOf(srv).MCPServer(mcpadapter.StaticCaller(&toolcall.Caller{Subject: "bob", Roles: []string{"admin"}}), nil)
	require.Equal(t, []string{mcpadapter.LayerWire, mcpadapter.LayerGovernance}, srv.Layers())

	changed := make(chan string, 10)
	connect := func(name string, serve func(context.Context, mcp.Transport) error) *mcp.ClientSession {
		serverEnd, clientEnd := mcp.NewInMemoryTransports()
		go func() { _ = serve(ctx, serverEnd) }()
		client := mcp.NewClient(&mcp.Implementation{Name: name}, &mcp.ClientOptions{
			ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- name },
		})
		cs, err := client.Connect(ctx, clientEnd, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		require.NoError(t, err)
		_, err = cs.ListTools(ctx, nil) // the listing a reload compares with
		require.NoError(t, err)
		return cs
	}
	ann := connect("ann", srv.Serve)
	defer ann.Close()
	bob := connect("bob", func(ctx context.Context, t mcp.Transport) error {
		return other.Run(ctx, mcpadapter.WrapTransport(wire.AnswerBeforeEOF(t)))
	})
	defer bob.Close()

	addShout(t, reg)
	require.NoError(t, srv.Reload(ctx))
	told := map[string]bool{}
	for len(told) < 2 {
		select {
		case name := <-changed:
			told[name] = true
		case <-ctx.Done():
			t.Fatalf("notifications/tools/list_changed reached only %v", told)
		}
	}

	for _, cs := range []*mcp.ClientSession{ann, bob} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "shout", Arguments: map[string]any{"text": "hi"}})
		require.NoError(t, err)
		require.False(t, res.IsError)
	}
	require.NoError(t, srv.Close())
	lines := strings.Split(strings.TrimSpace(trail.String()), "\n")
	require.Len(t, lines, 2, "one audit trail: %s", trail.String())
	require.Contains(t, lines[0], `"subject":"ann"`)
	require.Contains(t, lines[1], `"subject":"bob"`)
}

// TestOptionsMiddlewareInTheList: Options.Middleware run in their order,
// outside the governance (they see every tools/call before it is
// answered), and Layers lists them there.
func TestOptionsMiddlewareInTheList(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	var seen []string
	record := func(tag string) mcp.Middleware {
		return func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if method == "tools/call" {
					seen = append(seen, tag)
				}
				return next(ctx, method, req)
			}
		}
	}
	srv, err := toolgate.New(ctx, toolgate.Options{
		Methods:    demo.Methods(),
		Caller:     mcpadapter.StaticCaller(&toolcall.Caller{Subject: "ann", Roles: []string{"admin"}}),
		Middleware: []mcp.Middleware{record("first"), record("second")},
	})
	require.NoError(t, err)
	defer srv.Close()
	require.Equal(t, []string{mcpadapter.LayerWire, toolgate.LayerMiddleware, toolgate.LayerMiddleware, mcpadapter.LayerGovernance}, srv.Layers())
	serverEnd, clientEnd := mcp.NewInMemoryTransports()
	go func() { _ = srv.Serve(ctx, serverEnd) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, clientEnd, nil)
	require.NoError(t, err)
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	require.NoError(t, err)
	require.False(t, res.IsError)
	require.Equal(t, []string{"first", "second"}, seen)
}
