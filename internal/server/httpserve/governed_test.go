package httpserve_test

import (
	"testing"
	"time"

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
	// The opening place the initialize request held is given back after
	// its response is written, so the client can be connected a moment
	// before the count settles on the one session.
	require.Eventually(t, func() bool { return srv.SessionCount() == 1 }, 10*time.Second, 5*time.Millisecond)
	res, err := cs.ListTools(t.Context(), nil)
	require.NoError(t, err)
	require.NotNil(t, res)
}
