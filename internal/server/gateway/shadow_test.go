package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/server/gateway"
	"github.com/toolgate/toolgate/internal/server/shadow"
	"github.com/toolgate/toolgate/internal/testkit/mcptest"
	"github.com/toolgate/toolgate/toolcall"
)

// TestShadowCandidateThatDoesNotCompileIsReported: serving goes on with a
// candidate that does not compile; the console's status view and the
// operator's /healthz?verbose=1 name its error, and nothing is compared.
func TestShadowCandidateThatDoesNotCompileIsReported(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cand := filepath.Join(dir, "next")
	require.NoError(t, os.MkdirAll(cand, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(cand, "grant.rego"), []byte("package toolgate.grant\n\ngranted := {x |\n"), 0o600))
	root := &toolcall.Caller{Subject: "root", Roles: []string{"admin"}}
	tokens := writeTokens(t, dir, root)
	g := startGateway(t, gateway.Config{Serve: config.Serve{Tokens: tokens, Ledger: "memory", Audit: filepath.Join(dir, "audit.jsonl"),
		Shadow: shadow.Settings{Policy: cand}}})
	ctx := context.Background()
	cs := connect(t, ctx, g.url, protocols[0], root)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	require.NoError(t, err)
	require.False(t, res.IsError)

	base := strings.TrimSuffix(g.url, "/mcp")
	for _, path := range []string{"/console/api/status", "/healthz?verbose=1"} {
		status, b := mcptest.Get(t, t.Context(), base+path, tokenFor(root))
		var body struct {
			Shadow *struct {
				Candidate string `json:"candidate"`
				Error     string `json:"error"`
				Compared  uint64 `json:"compared"`
			} `json:"shadow"`
		}
		require.NoError(t, json.Unmarshal(b, &body))
		require.Equal(t, http.StatusOK, status, path)
		require.NotNil(t, body.Shadow, path)
		require.Contains(t, body.Shadow.Error, "grant.rego", path)
		require.Empty(t, body.Shadow.Candidate, path)
		require.Zero(t, body.Shadow.Compared, path)
	}
	require.Equal(t, "1", metricValue(t, base, root, "toolgate_shadow_candidate_refused_total"))
}
