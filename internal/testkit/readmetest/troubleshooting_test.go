package readmetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/testkit/oidctest"
)

// troublePage is the page of messages TestTroubleshootingMessages causes.
const troublePage = "docs/troubleshooting.md"

// TestTroubleshootingMessages causes, with the binary, each message that
// docs/troubleshooting.md shows in a ```text block, and matches the block
// against what the binary printed or answered, as the tour matches its
// output comments ("127.0.0.1:8787" is the test's address; a line that
// starts with "$ " is the command, not its output). A section whose message
// this test cannot cause, and a cause whose section is gone, fail it.
func TestTroubleshootingMessages(t *testing.T) {
	root := tourCheckout(t)
	ctx, cancel := context.WithTimeout(t.Context(), tourTimeout)
	defer cancel()

	// cause makes its section's message happen with tr's binary and
	// returns the output to match.
	causes := map[string]func(t *testing.T, tr *tour) string{
		"`bind: address already in use`": func(t *testing.T, tr *tour) string {
			l, err := net.Listen("tcp", tr.addr)
			require.NoError(t, err)
			defer l.Close()
			return runFails(ctx, t, tr, "serve", "--http", tr.addr)
		},
		"No tools: you are nobody": func(t *testing.T, tr *tour) string {
			require.NoError(t, tr.serve(ctx, step{text: "./toolgate serve --registry example/registry.yaml --policy rego"}))
			// Its welcome is written whole before it ends.
			srv := tr.server
			tr.stop()
			return srv.stderr.String()
		},
		"401 `invalid_token`": func(t *testing.T, tr *tour) string {
			p := oidctest.Start(t, 0, "http://"+tr.addr+"/mcp")
			require.NoError(t, tr.serve(ctx, step{text: "./toolgate serve --issuer " + p.Issuer}))
			resp := post(ctx, t, "http://"+tr.addr+"/mcp", "not-a-token")
			return fmt.Sprintf("%s %s\nWww-Authenticate: %s", resp.Proto, resp.Status, resp.Header.Get("WWW-Authenticate"))
		},
		"`Unknown tool` for a tool you know exists": func(t *testing.T, tr *tour) string {
			cmd := exec.CommandContext(ctx, "./toolgate", "explain", "--as", "max", "--role", "manager", "--tool", "execUrl")
			cmd.Dir, cmd.Env = tr.work, tr.env
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s", out)
			return string(out)
		},
		"`degraded` health": func(t *testing.T, tr *tour) string {
			sum := sha256.Sum256([]byte("admin-secret"))
			require.NoError(t, os.WriteFile(filepath.Join(tr.work, "tokens.yaml"),
				[]byte(hex.EncodeToString(sum[:])+": {subject: ann, roles: [admin]}\n"), 0o600))
			require.NoError(t, tr.serve(ctx, step{text: "./toolgate serve --registry example/registry.yaml --policy rego --tokens tokens.yaml"}))
			grant := filepath.Join(tr.work, "rego", "grant.rego")
			f, err := os.OpenFile(grant, os.O_APPEND|os.O_WRONLY, 0)
			require.NoError(t, err)
			_, err = f.WriteString("\nbroken := \n")
			require.NoError(t, err)
			require.NoError(t, f.Close())
			require.NoError(t, tr.server.wait(ctx, func(out string) bool { return strings.Contains(out, "reload failed") }))
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+tr.addr+"/healthz?verbose=1", nil)
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer admin-secret")
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			return string(b)
		},
		"The bundle server is down at the first start": func(t *testing.T, tr *tour) string {
			return runFails(ctx, t, tr, "serve", "--bundle", "http://"+freeAddr(t)+"/toolgate.tar.gz")
		},
	}

	seen := map[string]bool{}
	for _, b := range pageBlocks(t, root, troublePage) {
		if b.lang != "text" {
			continue
		}
		cause, ok := causes[b.section]
		require.True(t, ok, "%s: no cause is known to this test for the message of section %q", b.where(), b.section)
		seen[b.section] = true
		t.Run(b.section, func(t *testing.T) {
			tr := newTour(t, root)
			tr.page = troublePage
			require.NoError(t, tr.build(ctx, step{text: "go build -o toolgate ./cmd/toolgate"}))
			var want []string
			for _, l := range strings.Split(strings.TrimSpace(b.body), "\n") {
				if !strings.HasPrefix(l, "$ ") {
					want = append(want, l)
				}
			}
			re := expectation(tr.subst(strings.Join(want, "\n")))
			got := cause(t, tr)
			require.Regexp(t, re, got, "%s: the page's message is not what the binary says", b.where())
		})
	}
	for section := range causes {
		require.True(t, seen[section], "%s has no section %q with a message any more", troublePage, section)
	}
}

// runFails runs the tour's binary with args, which must fail, and returns
// its output.
func runFails(ctx context.Context, t *testing.T, tr *tour, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, "./toolgate", args...)
	cmd.Dir, cmd.Env = tr.work, tr.env
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "toolgate %s must fail; its output:\n%s", strings.Join(args, " "), out)
	return string(out)
}

// post sends an MCP request with a bearer token and returns the response,
// its body read and closed.
func post(ctx context.Context, t *testing.T, url, token string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url,
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	require.NoError(t, resp.Body.Close())
	return resp
}
