package mcpadapter_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/wire"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/toolcall"
)

// TestNewServerWithOneOrder: a governed server's receiving middleware are
// one list, outermost first: the transport's own, the wire layer, the
// host's, the catalog, the governance. The host's layers see the _meta
// as sent through the wire layer (wire.InfoOf), and no wire entry in the
// decoded _meta.
func TestNewServerWithOneOrder(t *testing.T) {
	t.Parallel()
	_, a, _, _ := secServer(t, "package toolgate.grant\n\ngranted := {\"echo\"}\n", mcpadapter.Options{Catalog: testCatalog{},
		Caller: mcpadapter.StaticCaller(&toolcall.Caller{Subject: "ann", Roles: []string{"admin"}})})

	var mu sync.Mutex
	var ran []string
	var innerMeta string
	var entryLeft bool
	layer := func(name string, inner bool) mcpadapter.Layer {
		return mcpadapter.Layer{Name: name, Middleware: func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if c, ok := req.(*mcp.CallToolRequest); ok {
					mu.Lock()
					ran = append(ran, name)
					if inner {
						innerMeta = wire.InfoOf(ctx, req).Meta
						_, entryLeft = c.Params.Meta[wire.Key]
					}
					mu.Unlock()
				}
				return next(ctx, method, req)
			}
		}}
	}
	srv, names := a.NewServerWith(&mcp.Implementation{Name: "toolgate", Version: "test"}, nil, mcpadapter.Layers{
		Transport: []mcpadapter.Layer{layer("t1", false), layer("t2", false)},
		Inner:     []mcpadapter.Layer{layer("i1", true)},
	})
	require.Equal(t, []string{"t1", "t2", mcpadapter.LayerWire, "i1", mcpadapter.LayerCatalog, mcpadapter.LayerGovernance}, names)

	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(t.Context(), mcpadapter.WrapTransport(st), nil)
	require.NoError(t, err)
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(t.Context(), ct, nil)
	require.NoError(t, err)
	defer cs.Close()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"},
		Meta: mcp.Meta{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}})
	require.NoError(t, err)
	require.False(t, res.IsError)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"t1", "t2", "i1"}, ran)
	var sent map[string]any
	require.NoError(t, json.Unmarshal([]byte(innerMeta), &sent), "%s", innerMeta)
	require.Equal(t, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", sent["traceparent"])
	require.False(t, entryLeft, "the wire entry is taken before the host's layers")
}
