package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/testkit/conformance"
	"github.com/toolgate/toolgate/internal/testkit/mcptest"
	"github.com/toolgate/toolgate/internal/testkit/proctest"
)

// upstreamBinary builds the test upstream MCP server
// (internal/testkit/testserver/cmd/upstreamtest) once per test run.
func upstreamBinary(t *testing.T) string {
	t.Helper()
	return proctest.Build(t, "./internal/testkit/testserver/cmd/upstreamtest")
}

// upstreamBound bounds a call of a tool whose upstream is down or hangs:
// the upstream's own time-outs (connect 10 s, call 30 s) answer it well
// before; the bound fails a hung call only, never a slow machine.
const upstreamBound = time.Minute

// upstreamRows are rows added to the bundled example: two dispatch to the
// upstream "up", one to the upstream "down" that never starts.
const upstreamRows = `
  - name: upHello
    method: upstream:up/hello
    description: Greets someone, upstream.
    arguments:
      - { name: name, type: string, required: true }

  - name: upFail
    method: upstream:up/fail
    description: An upstream isError result.

  - name: downHello
    method: upstream:down/hello
    description: A tool of an upstream that is down.
    arguments:
      - { name: name, type: string, required: true }
`

// TestE2EUpstream runs `toolgate serve` in front of the upstreamtest MCP
// server (over stdio, from a config file with import: true) and of an
// upstream whose command does not exist: proxying, import, isError
// pass-through, and a down upstream that answers its tools with the
// generic internal error, quickly, while the rest keeps working.
func TestE2EUpstream(t *testing.T) {
	skipShort(t)
	t.Parallel()
	up := upstreamBinary(t)
	dir := t.TempDir()
	regPath, polDir := writeExample(t, dir, &conformance.Fixture{Registry: string(toolgate.ExampleRegistry()) + upstreamRows})
	cfg := filepath.Join(dir, "toolgate.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(fmt.Sprintf(`# upstream MCP servers for the end-to-end test
upstreams:
  - { name: up, command: %q, import: true, section: reports }
`, up)), 0o644))
	s := serveHTTP(t, "--config", cfg, "--registry", regPath, "--policy", polDir, "--tokens", writeTokens(t),
		"--upstream", "down="+filepath.Join(dir, "no-such-upstream"))

	for _, version := range revisions {
		t.Run(version, func(t *testing.T) {
			admin := s.connect(t, adminToken, version, nil)

			names := toolNames(t, admin)
			require.Subset(t, names, append(append([]string{}, exampleTools...), "upHello", "upFail", "downHello"))
			require.Subset(t, names, []string{"up.echo", "up.slow"}, "the upstream's tools that no row names are imported")
			require.NotContains(t, names, "up.hello", "a tool a row names is not imported")
			require.NotContains(t, names, "up.fail", "a tool a row names is not imported")

			// Proxying: the row's call reaches the upstream's hello.
			require.Equal(t, ok("hello, ann"), call(t, admin, "upHello", map[string]any{"name": "ann"}, nil))
			// Arguments are bound against the row before the upstream is asked.
			require.Equal(t, refused("Error: Missing required argument 'name'."), call(t, admin, "upHello", nil, nil))
			// Import: up.echo answers its arguments.
			echo := call(t, admin, "up.echo", map[string]any{"label": "abc", "count": 2}, nil)
			require.False(t, echo.IsError, "up.echo: %s", echo.Text)
			var args map[string]any
			require.NoError(t, json.Unmarshal([]byte(echo.Text), &args), "up.echo: %s", echo.Text)
			require.Equal(t, map[string]any{"label": "abc", "count": float64(2)}, args)
			// An imported row is governed like any other: its schema binds.
			require.Equal(t, refused("Error: Missing required argument 'label'."), call(t, admin, "up.echo", map[string]any{"count": 2}, nil))
			// An upstream isError result passes through as a result.
			require.Equal(t, refused("upstream failed"), call(t, admin, "upFail", nil, nil))

			// A down upstream: the generic internal answer, never a hang.
			start := time.Now()
			require.Equal(t, refused("Error: An internal error occurred while executing the tool."),
				mcptest.Call(t, upstreamBound, admin, "downHello", map[string]any{"name": "ann"}, nil))
			t.Logf("a down upstream answered in %s", time.Since(start))
			// ... and the rest keeps working.
			require.Equal(t, ok("5"), call(t, admin, "add", map[string]any{"a": 2, "b": 3}, nil))
			require.Equal(t, ok("hello, bo"), call(t, admin, "upHello", map[string]any{"name": "bo"}, nil))
		})
	}
}

// TestE2EUpstreamHangs: an upstream that starts but never answers (it reads
// its stdin and says nothing): its tools answer with the generic internal
// error within the upstream time-outs, the rest keeps working, and the
// server does not wait for it to start serving.
func TestE2EUpstreamHangs(t *testing.T) {
	skipShort(t)
	t.Parallel()
	dir := t.TempDir()
	rows := `
  - name: hangHello
    method: upstream:hang/hello
    arguments:
      - { name: name, type: string, required: true }
`
	regPath, polDir := writeExample(t, dir, &conformance.Fixture{Registry: string(toolgate.ExampleRegistry()) + rows})
	cfg := filepath.Join(dir, "toolgate.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(`upstreams:
  - { name: hang, command: /bin/sh, args: ["-c", "cat >/dev/null; exit 0"], import: true, timeout: 3s }
`), 0o644))
	s := serveHTTP(t, "--config", cfg, "--registry", regPath, "--policy", polDir, "--tokens", writeTokens(t))
	// The connection attempt ends (and is logged) only at the upstream's
	// 3 s connect time-out: serving before it is logged shows the server
	// did not wait to serve (its listings wait for the attempt to end).
	// (The log is read through a pipe: at worst a late read hides a
	// regression, it never fails a good run.)
	const connectFailed = "waited 3s for the upstream's answer to initialize"
	require.NotContains(t, s.Stderr.String(), connectFailed, "a hanging upstream does not hold the server back")
	admin := s.connect(t, adminToken, "2025-11-25", nil)
	require.Equal(t, append(append([]string{}, exampleTools...), "hangHello"), toolNames(t, admin))

	start := time.Now()
	require.Equal(t, refused("Error: An internal error occurred while executing the tool."),
		mcptest.Call(t, upstreamBound, admin, "hangHello", map[string]any{"name": "ann"}, nil))
	t.Logf("a hanging upstream answered in %s", time.Since(start))
	require.Equal(t, ok("5"), call(t, admin, "add", map[string]any{"a": 2, "b": 3}, nil))
	// The witness above is real: the call failed because the attempt did,
	// which logs it (just after it lets the waiting call go on: the line is
	// awaited, not looked for at once).
	s.Await(t, s.Stderr, regexp.MustCompile(regexp.QuoteMeta(connectFailed)))
}
