package gateway_test

//lint:file-ignore SA1019 sampling is deprecated from protocol revision 2026-07-28 on; the clients of earlier revisions declare it

import (
	"context"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/server/gateway"
	"github.com/toolgate/toolgate/internal/testkit/oidctest"
	"github.com/toolgate/toolgate/internal/testkit/proctest"
	"github.com/toolgate/toolgate/toolcall"
	"github.com/toolgate/toolgate/upstream"
)

// TestReferenceSamplingOverHTTP (docs/contract.md §19): the reference
// server's tool that asks its client to sample
// (@modelcontextprotocol/server-everything's trigger-sampling-request),
// served over streamable HTTP behind the gateway, is answered as it is
// directly: the client that declared sampling samples, and the tool's
// answer carries what it sampled.
func TestReferenceSamplingOverHTTP(t *testing.T) {
	t.Parallel()
	node := oidctest.RequireNode(t, upstreamsDir, "the reference MCP servers are not installed: run scripts/upstreams-setup")
	script, err := filepath.Abs(filepath.Join(upstreamsDir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"))
	require.NoError(t, err)
	port := oidctest.FreePort(t)
	cmd := exec.Command(node, script, "streamableHttp")
	cmd.Env = append(cmd.Environ(), "PORT="+strconv.Itoa(port))
	var stderr proctest.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := "127.0.0.1:" + strconv.Itoa(port)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		require.True(t, time.Now().Before(deadline), "the reference server did not listen: %s", stderr.String())
	}

	ann := &toolcall.Caller{Subject: "ann", Roles: []string{"admin"}}
	dir := t.TempDir()
	reg, pol := writeSource(t, dir, `tools:
  - {name: sample, method: "upstream:ev/trigger-sampling-request", arguments: [{name: prompt, type: string, required: true}]}
`, "package toolgate.grant\n")
	watch := false
	g := startGateway(t, gateway.Config{
		Serve: config.Serve{Registry: reg, Policy: pol, Tokens: writeTokens(t, dir, ann),
			Upstreams: []upstream.Settings{{Name: "ev", URL: "http://" + addr + "/mcp"}},
			Ledger:    "memory", Audit: filepath.Join(dir, "audit.jsonl"), Watch: &watch},
		Stderr: io.Discard,
	})
	cs := connectClient(t, g.url, "2025-11-25", ann)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "sample", Arguments: map[string]any{"prompt": "hi"}})
	require.NoError(t, err)
	require.Len(t, res.Content, 1)
	text := res.Content[0].(*mcp.TextContent).Text
	assert.False(t, res.IsError, text)
	assert.True(t, strings.Contains(text, "sampled ann"), "the tool answers what the client sampled: %s", text)
}
