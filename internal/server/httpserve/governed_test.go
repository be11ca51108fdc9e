package httpserve_test

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/server/httpserve"
	"github.com/toolgate/toolgate/mcpadapter"
)

// TestMCPServerGetsTheLayers: the HTTP transport hands its receiving
// middleware, outermost first, to the builder of the MCP server
// (Options.MCPServer), which adds them first in its one list; they then
// serve (the sessions are counted).
func TestMCPServerGetsTheLayers(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var names []string
	srv := httpserve.New(httpserve.Options{MCPServer: func(transport []mcpadapter.Layer) *mcp.Server {
		for _, l := range transport {
			names = append(names, l.Name)
		}
		return f.build(transport)
	}})
	require.Equal(t, []string{httpserve.LayerSessions, httpserve.LayerAbort, httpserve.LayerListenEnd, httpserve.LayerAccessToken}, names)
	ts := httptest_NewServer(t, srv)
	cs := connectProto(t, ts.URL+"/mcp", newBearer(""), "2025-06-18")
	defer cs.Close()
	require.Equal(t, 1, srv.SessionCount())
	res, err := cs.ListTools(t.Context(), nil)
	require.NoError(t, err)
	require.NotNil(t, res)
}
