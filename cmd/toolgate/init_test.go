package main

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/testkit/proctest"
)

// TestE2EInit: `toolgate init DIR` scaffolds a project in which `toolgate
// test` and `toolgate check --config toolgate.yaml` pass and `toolgate serve
// --config toolgate.yaml` serves: the example token's caller sees and calls
// echo, and the call policy's deny answers. With --upstream, the upstream's
// tools are imported and granted to the project's role.
func TestE2EInit(t *testing.T) {
	skipShort(t)
	t.Parallel()
	bin := toolgateBinary(t)
	run := func(t *testing.T, dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "toolgate %s:\n%s", strings.Join(args, " "), out)
		return string(out)
	}
	for _, tc := range []struct {
		name  string
		flags []string
		tools []string
	}{
		{"plain", nil, []string{"echo"}},
		{"upstream", []string{"--upstream", "up=" + upstreamBinary(t)}, []string{"echo", "up.crash", "up.echo", "up.fail", "up.hello", "up.slow"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "project")
			out := run(t, ".", append([]string{"init", dir}, tc.flags...)...) // flags after DIR

			require.Contains(t, out, "wrote toolgate.yaml")
			userToken, operatorToken := initTokens(t, out)

			require.Contains(t, run(t, dir, "test"), "PASS: 6/6")
			require.Contains(t, run(t, dir, "check", "--config", "toolgate.yaml"), "ok: no errors")

			cmd := exec.Command(bin, "serve", "--config", "toolgate.yaml", "--http", "127.0.0.1:0")
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+t.TempDir())
			cmd.WaitDelay = 5 * time.Second
			p := proctest.Start(t, "toolgate serve --config toolgate.yaml", cmd)
			s := &served{Proc: p, base: p.Await(t, p.Stdout, urlLine)[1]}
			s.url = s.base + "/mcp"
			cs := s.connect(t, userToken, "2025-06-18", nil)
			names := toolNames(t, cs)
			for _, n := range tc.tools {
				require.Contains(t, names, n)
			}

			ctx, cancel := context.WithTimeout(t.Context(), callTimeout)
			defer cancel()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
			require.NoError(t, err)
			require.False(t, res.IsError)
			require.Equal(t, "hi", res.Content[0].(*mcp.TextContent).Text)
			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": strings.Repeat("a", 201)}})
			require.NoError(t, err)
			require.True(t, res.IsError)
			require.Contains(t, res.Content[0].(*mcp.TextContent).Text, "Tool 'echo' takes at most 200 characters of text")
			if tc.name == "upstream" {
				res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "up.hello", Arguments: map[string]any{"name": "you"}})
				require.NoError(t, err)
				require.False(t, res.IsError, "%v", res.Content)
				require.Equal(t, "hello, you", res.Content[0].(*mcp.TextContent).Text)
			}
			// Nobody (no token) sees nothing; the operator sees no tool
			// but the operator's pages.
			require.Empty(t, toolNames(t, s.connect(t, "", "2025-06-18", nil)))
			require.Empty(t, toolNames(t, s.connect(t, operatorToken, "2025-06-18", nil)))
			req, err := http.NewRequest(http.MethodGet, s.base+"/metrics", nil)
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer "+operatorToken)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode, "the operator token reads /metrics")

			// A second init writes nothing over the project.
			cmd = exec.Command(bin, "init", dir)
			out2, err := cmd.CombinedOutput()
			require.Error(t, err)
			require.Contains(t, string(out2), "already exist")
		})
	}
}

// tokenLine is a token line of init's output: "  me (role user):   TOKEN".
var tokenLine = regexp.MustCompile(`(?m)^  (me|operator) \(role [^)]+\): +(tg_[A-Za-z0-9_-]{43})$`)

// initTokens returns the user's and the operator's tokens init printed.
func initTokens(t *testing.T, out string) (user, operator string) {
	t.Helper()
	for _, m := range tokenLine.FindAllStringSubmatch(out, -1) {
		if m[1] == "me" {
			user = m[2]
		} else {
			operator = m[2]
		}
	}
	require.NotEmpty(t, user, "init prints the user's token:\n%s", out)
	require.NotEmpty(t, operator, "init prints the operator's token:\n%s", out)
	return user, operator
}

// TestInitUsage: a bad --upstream or a second directory is a usage error.
func TestInitUsage(t *testing.T) {
	for _, args := range [][]string{
		{"init", "--upstream", "no-equals-sign"},
		{"init", "--upstream", "bad name=cmd"},
		{"init", "a", "b"},
		{"init", "--role", "has space", t.TempDir()},
	} {
		var stderr strings.Builder
		code := run(context.Background(), &env{args: args, stdout: &strings.Builder{}, stderr: &stderr})
		require.NotEqual(t, 0, code, "%v", args)
		require.NotEmpty(t, stderr.String(), "%v", args)
	}
}
