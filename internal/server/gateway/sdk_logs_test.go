package gateway_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/server/gateway"
	"github.com/toolgate/toolgate/internal/testkit/proctest"
	"github.com/toolgate/toolgate/toolcall"
	"github.com/toolgate/toolgate/upstream"
)

// TestSDKSessionLinesNotLogged: the go-sdk's INFO lines about each
// session (on the sessionless revision, a session per request) do not
// reach the gateway's log, at either end of a relayed call; its warnings
// would.
func TestSDKSessionLinesNotLogged(t *testing.T) {
	up := startEverythingHTTP(t, false) + "/mcp"
	dir := t.TempDir()
	caller := &toolcall.Caller{Subject: "alice"}
	reg, pol := writeSource(t, dir, "tools:\n  - {name: simple, method: \"upstream:ev/test_simple_text\"}\n", "package toolgate.grant\n")
	watch := false
	var stderr proctest.Buffer
	g := startGateway(t, gateway.Config{
		Serve: config.Serve{Registry: reg, Policy: pol, Tokens: writeTokens(t, dir, caller),
			Upstreams: []upstream.Settings{{Name: "ev", URL: up}},
			Ledger:    "memory", Audit: filepath.Join(dir, "audit.jsonl"), Watch: &watch},
		Stderr: &stderr,
	})
	for _, proto := range []string{"", "2025-11-25"} {
		cs := connectClient(t, g.url, proto, caller)
		for range 3 {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "simple"})
			require.NoError(t, err)
			require.False(t, res.IsError)
		}
	}
	for _, line := range []string{"server session connected", "session initialized", "server session disconnected", "server connecting"} {
		assert.NotContains(t, stderr.String(), line)
	}
}
