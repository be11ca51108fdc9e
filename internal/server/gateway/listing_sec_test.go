package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/server/gateway"
	"github.com/toolgate/toolgate/toolcall"
)

// TestListFallbackNoneOverHTTP: listFallback none, set in the
// configuration, reaches the served listing: a malformed _meta that makes a
// strict policy fail lists nothing, where the default lists the base
// decision with the hidden tool.
func TestListFallbackNoneOverHTTP(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	reg, pol := writeSource(t, dir, "tools:\n  - { name: echo, method: demo.echo, arguments: [{ name: text, type: string, required: true }] }\n  - { name: execUrl, method: demo.execUrl, driver: url, arguments: [{ name: url, type: string, required: true }] }\n", `package toolgate.grant

default level := 0

level := to_number(input.request.meta["x/level"]) if input.request.meta["x/level"]

granted := {t.name | some t in input.tools; t.base; t.name != "execUrl"; level >= 0}
`)
	alice := &toolcall.Caller{Subject: "alice", Roles: []string{}}
	tokens := writeTokens(t, dir, alice)
	off := false
	for _, tc := range []struct {
		fallback string
		want     []string
	}{
		{"", []string{"echo", "execUrl"}},
		{config.ListFallbackNone, []string{}},
	} {
		t.Run("fallback="+tc.fallback, func(t *testing.T) {
			t.Parallel()
			g := startGateway(t, gateway.Config{Serve: config.Serve{Registry: reg, Policy: pol, Tokens: tokens, Ledger: "memory", Watch: &off, ListFallback: tc.fallback}, Stderr: io.Discard})
			ctx := context.Background()
			cs := connect(t, ctx, g.url, "2025-11-25", alice)
			res, err := cs.ListTools(ctx, &mcp.ListToolsParams{Meta: mcp.Meta{"x/level": "not a number"}})
			require.NoError(t, err)
			names := []string{}
			for _, tool := range res.Tools {
				names = append(names, tool.Name)
			}
			require.Equal(t, tc.want, names)
		})
	}
}

// TestServeLoadsNetworkBuiltinsOnlyWhenCapabilitiesListThem: serve refuses a policy calling http.send,
// naming it, unless the configured capabilities file lists it.
func TestServeLoadsNetworkBuiltinsOnlyWhenCapabilitiesListThem(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	reg, pol := writeSource(t, dir, "tools:\n  - { name: echo, method: demo.echo }\n", "package toolgate.grant\n\ngranted := {\"echo\"} if {\n\thttp.send({\"method\": \"GET\", \"url\": \"http://127.0.0.1:9\"}).body.allow\n}\n")
	off := false
	serve := config.Serve{Registry: reg, Policy: pol, Ledger: "memory", Watch: &off, HTTP: "127.0.0.1:0"}

	err := gateway.Run(context.Background(), gateway.Config{Serve: serve, Stderr: io.Discard})
	require.ErrorContains(t, err, "http.send")
	require.ErrorContains(t, err, "grant.rego:4")

	b, err := json.Marshal(ast.CapabilitiesForThisVersion())
	require.NoError(t, err)
	serve.Capabilities = filepath.Join(dir, "capabilities.json")
	require.NoError(t, os.WriteFile(serve.Capabilities, b, 0o600))
	startGateway(t, gateway.Config{Serve: serve, Stderr: io.Discard})
}
