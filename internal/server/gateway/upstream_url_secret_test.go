package gateway_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/decisionlog"
	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/server/gateway"
	"github.com/toolgate/toolgate/internal/testkit/proctest"
	"github.com/toolgate/toolgate/toolcall"
	"github.com/toolgate/toolgate/upstream"
)

// TestUpstreamURLSecretsNeverWritten: an upstream whose url carries a
// secret in its query or its user information, and which refuses every
// connection, is retried on each call; neither secret reaches the log,
// stderr, the audit trail, the decision log or the caller's answer, while
// the failure is still logged with the upstream's address.
func TestUpstreamURLSecretsNeverWritten(t *testing.T) {
	t.Parallel()
	querySecret := randomSecret("query-SECRET-")
	userSecret := randomSecret("user-SECRET-")
	down := httptest.NewServer(http.NotFoundHandler())
	addr := strings.TrimPrefix(down.URL, "http://")
	down.Close()

	dir := t.TempDir()
	reg, pol := writeSource(t, dir, `tools:
  - {name: by_query, method: "upstream:byquery/whoami"}
  - {name: by_user, method: "upstream:byuser/whoami"}
`, "package toolgate.grant\n")
	ops := &toolcall.Caller{Subject: "ops", Roles: []string{"admin"}}
	auditPath := filepath.Join(dir, "audit.jsonl")
	dlogPath := filepath.Join(dir, "decisions.jsonl")
	var logs, stderr proctest.Buffer
	g := startGateway(t, gateway.Config{
		Serve: config.Serve{Registry: reg, Policy: pol, Tokens: writeTokens(t, dir, ops), Ledger: "memory",
			Audit: auditPath, DecisionLog: decisionlog.Settings{Target: dlogPath},
			Upstreams: []upstream.Settings{
				{Name: "byquery", URL: "http://" + addr + "/mcp?region=eu&token=" + querySecret},
				{Name: "byuser", URL: "http://svc:" + userSecret + "@" + addr + "/mcp"},
			}},
		Stderr: &stderr,
		Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	cs := connect(t, t.Context(), g.url, "2025-11-25", ops)
	var answers []string
	for range 2 {
		for _, tool := range []string{"by_query", "by_user"} {
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
			require.NoError(t, err)
			require.True(t, res.IsError, "%s: the upstream is down", tool)
			for _, c := range res.Content {
				answers = append(answers, c.(*mcp.TextContent).Text)
			}
		}
	}
	require.NoError(t, g.stop())

	audit, err := os.ReadFile(auditPath)
	require.NoError(t, err)
	require.Contains(t, string(audit), "by_query", "the failed calls are audited")
	dlog, err := os.ReadFile(dlogPath)
	require.NoError(t, err)
	require.Contains(t, logs.String(), addr+"/mcp", "the failure is logged with the upstream's address")
	outputs := map[string]string{"log": logs.String(), "stderr": stderr.String(), "audit": string(audit),
		"decision log": string(dlog), "answers": strings.Join(answers, "\n")}
	for what, out := range outputs {
		for _, secret := range []string{querySecret, userSecret} {
			require.NotContains(t, out, secret, "%s holds a secret of an upstream's url", what)
		}
	}
}
