package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/stretchr/testify/require"
)

// TestNetworkBuiltinsRefusedEverywhere: a policy calling http.send
// fails to load, naming the built-in and its line, in serve, test, check
// and explain alike, and the server it names never receives a request;
// with --capabilities listing http.send it loads in each of them.
func TestNetworkBuiltinsRefusedEverywhere(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"allow": true}`))
	}))
	t.Cleanup(srv.Close)

	dir := t.TempDir()
	reg := filepath.Join(dir, "registry.yaml")
	pol := filepath.Join(dir, "rego")
	require.NoError(t, os.Mkdir(pol, 0o755))
	require.NoError(t, os.WriteFile(reg, []byte("tools:\n  - { name: echo, method: demo.echo, arguments: [{ name: text, type: string, required: true }] }\n"), 0o600))
	grant := filepath.Join(pol, "grant.rego")
	require.NoError(t, os.WriteFile(grant, []byte("package toolgate.grant\n\ngranted := {\"echo\"} if {\n\thttp.send({\"method\": \"GET\", \"url\": \""+srv.URL+"\"}).body.allow\n}\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(pol, "grant_test.rego"), []byte("package toolgate.grant_test\n\nimport data.toolgate.grant\n\ntest_echo if {\n\t\"echo\" in grant.granted with input as {\"caller\": {\"subject\": \"a\", \"roles\": [], \"claims\": {}}}\n}\n"), 0o600))

	// As `opa capabilities --current` writes it, with the server's host allowed.
	caps := ast.CapabilitiesForThisVersion()
	host, _, err := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	require.NoError(t, err)
	caps.AllowNet = []string{host}
	b, err := json.Marshal(caps)
	require.NoError(t, err)
	capsFile := filepath.Join(t.TempDir(), "capabilities.json")
	require.NoError(t, os.WriteFile(capsFile, b, 0o600))

	source := []string{"--registry", reg, "--policy", pol}
	commands := map[string][]string{
		"serve":   append([]string{"serve", "--http", "127.0.0.1:0", "--ledger", "memory", "--no-watch"}, source...),
		"test":    {"test", pol},
		"check":   append([]string{"check"}, source...),
		"explain": append([]string{"explain", "--as", "ann", "--tool", "echo"}, source...),
	}
	runIt := func(args []string) (int, string) {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), &env{args: args, stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr})
		return code, stdout.String() + stderr.String()
	}
	for name, args := range commands {
		t.Run(name, func(t *testing.T) {
			code, out := runIt(args)
			require.NotZero(t, code, out)
			require.Contains(t, out, "http.send", "the built-in is named")
			require.Contains(t, out, "grant.rego:4", "with its line")
		})
	}
	require.Zero(t, hits.Load(), "a policy that does not load sent a request")

	// With the capabilities file, the policy loads (serve is left out: it
	// would serve; the engine's own test loads it with the same option).
	for _, name := range []string{"test", "check", "explain"} {
		t.Run(name+" --capabilities", func(t *testing.T) {
			args := append([]string{commands[name][0], "--capabilities", capsFile}, commands[name][1:]...)
			code, out := runIt(args)
			require.Zero(t, code, out)
		})
	}
	require.Positive(t, hits.Load())
}
