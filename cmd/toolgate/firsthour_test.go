package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/testkit/mcptest"
	"github.com/toolgate/toolgate/internal/testkit/proctest"
)

// TestE2EFirstHour drives a new user's first hour through the binary:
// init with an upstream, serve, the first listing has its tools, a call
// through toolgate call allowed for the user's token and hidden for the
// operator's, and explain in the project (reading its toolgate.yaml,
// connecting its upstream) answering what the served call answered.
// The upstream takes 15 s before it reads its input, as an npx server's
// first run does: the first listing still has its tools.
func TestE2EFirstHour(t *testing.T) {
	skipShort(t)
	t.Parallel()
	bin := toolgateBinary(t)
	firstHourUpstream := filepath.Join(t.TempDir(), "slow-upstream")
	require.NoError(t, os.WriteFile(firstHourUpstream, []byte("#!/bin/sh\nsleep 15\nexec '"+upstreamBinary(t)+"' \"$@\"\n"), 0o755))
	state := t.TempDir()
	run := func(dir string, args ...string) (string, error) {
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+state, "TOOLGATE_TOKEN=")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	dir := filepath.Join(t.TempDir(), "project")
	out, err := run(".", "init", dir, "--upstream", "up="+firstHourUpstream)
	require.NoError(t, err, out)
	user, operator := initTokens(t, out)

	out, err = run(dir, "check")
	require.NoError(t, err, "check reads ./toolgate.yaml:\n%s", out)
	require.Contains(t, out, "ok: no errors")

	cmd := exec.Command(bin, "serve", "--config", "toolgate.yaml", "--http", "127.0.0.1:0")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+state)
	cmd.WaitDelay = 5 * time.Second
	p := proctest.Start(t, "toolgate serve --config toolgate.yaml", cmd)
	s := &served{Proc: p, base: p.Await(t, p.Stdout, urlLine)[1]}
	s.url = s.base + "/mcp"
	// The listing waits for the upstream's start (its timeout is 2 minutes).
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	require.Contains(t, mcptest.ToolNames(t, ctx, s.connect(t, user, "2025-06-18", nil)), "up.hello", "the first listing has the upstream's tools")

	served, err := run(dir, "call", "--url", s.url, "--token", user, "up.hello", "name=you")
	require.NoError(t, err, served)
	require.Equal(t, "hello, you\n", served)

	hidden, err := run(dir, "call", "--url", s.url, "--token", operator, "up.hello", "name=you")
	require.Error(t, err, "exit 1 on isError")
	require.Contains(t, hidden, "Unknown tool 'up.hello'")

	// explain in the project answers what serve answered.
	out, err = run(dir, "explain", "--connect", "--as", "me", "--role", "user", "--tool", "up.hello", "--args", `{"name":"you"}`)
	require.NoError(t, err, out)
	require.Contains(t, out, "up.hello")
	require.NotContains(t, out, "no method")
	require.NotContains(t, out, "getReward", "not the bundled example's registry")
	out, err = run(dir, "explain", "--connect", "--as", "operator", "--role", "admin", "--tool", "up.hello")
	require.NoError(t, err, out)
	require.True(t, strings.Contains(out, "Unknown tool 'up.hello'") || strings.Contains(out, "hidden"), out)
}
