package gateway_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/identity"
	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/runtime/bundle"
	"github.com/toolgate/toolgate/internal/server/gateway"
	"github.com/toolgate/toolgate/internal/testkit/mcptest"
	"github.com/toolgate/toolgate/internal/testkit/proctest"
	"github.com/toolgate/toolgate/methods"
	"github.com/toolgate/toolgate/upstream"
)

// syncBuffer is a Buffer the gateway may close.
type syncBuffer struct{ proctest.Buffer }

func (*syncBuffer) Close() error { return nil }

// TestDemoTokenOnlyForBareBundledOnLoopback: the public demo token
// (printed in the README) works only when the server serves nothing but the
// bundled example on a loopback address (docs/contract.md §11). Served on every
// interface, or with an upstream or a host method added, it is an ordinary
// Authorization header of a server without --tokens: the caller is nobody,
// sees no tool and runs nothing; the start-up message says so.
func TestDemoTokenOnlyForBareBundledOnLoopback(t *testing.T) {
	t.Parallel()
	extra := methods.Map{}
	extra.Register("host.deleteAll", func(context.Context, struct{}) (string, error) { return "deleted", nil })
	cases := []struct {
		name      string
		addr      string
		upstreams []upstream.Settings
		extra     methods.Map
		demo      bool
	}{
		{name: "bundled alone on 127.0.0.1", addr: "127.0.0.1:0", demo: true},
		{name: "bundled alone on every interface", addr: "0.0.0.0:0"},
		{name: "bundled alone on an empty host", addr: ":0"},
		{name: "bundled with an importing upstream on loopback", addr: "127.0.0.1:0",
			upstreams: []upstream.Settings{{Name: "files", URL: "http://127.0.0.1:1/mcp", Import: true}}},
		{name: "bundled with host methods on loopback", addr: "127.0.0.1:0", extra: extra},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out := &syncBuffer{}
			cfg := gateway.Config{
				Serve:        config.Serve{HTTP: tc.addr, Upstreams: tc.upstreams, Ledger: "memory", Audit: filepath.Join(t.TempDir(), "audit.jsonl")},
				Stdout:       out,
				ExtraMethods: tc.extra,
			}
			ctx := t.Context()
			port := serveGateway(t, cfg).addr.(*net.TCPAddr).Port
			url := "http://127.0.0.1:" + strconv.Itoa(port) + "/mcp"

			tr := &http.Transport{}
			defer tr.CloseIdleConnections()
			client := mcp.NewClient(&mcp.Implementation{Name: "sec04", Version: "1"}, nil)
			cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url,
				HTTPClient:           &http.Client{Transport: mcptest.Bearer{Token: identity.DemoTokenValue, Next: tr}},
				DisableStandaloneSSE: true}, nil)
			require.NoError(t, err)
			defer cs.Close()
			list, err := cs.ListTools(ctx, nil)
			require.NoError(t, err)
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
			require.NoError(t, err)
			welcome := out.String()
			if tc.demo {
				require.NotEmpty(t, list.Tools, "the demo token is the demo admin here")
				require.False(t, res.IsError, "the demo admin calls echo")
				require.Contains(t, welcome, identity.DemoTokenValue)
				return
			}
			require.Empty(t, list.Tools, "the demo token must be nobody here")
			require.True(t, res.IsError)
			require.Equal(t, "Error: Unknown tool 'echo'.", res.Content[0].(*mcp.TextContent).Text)
			require.NotContains(t, welcome, identity.DemoTokenValue, "the welcome must not offer the demo token")
			require.Contains(t, welcome, "every HTTP caller is nobody")
		})
	}
}

// TestDemoTokenNotWithABundle: a bundle is not the bundled example,
// even though it names no registry or policy directory: served on
// loopback without --tokens, the public demo token is nobody, and the
// console does not call the bundle "the bundled example". Not parallel:
// the state directory is set through the environment.
func TestDemoTokenNotWithABundle(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	raw := exampleBundle(t, "prod-7", "")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(raw) }))
	defer srv.Close()
	cfg := gateway.Config{Serve: config.Serve{HTTP: "127.0.0.1:0", Ledger: "memory", Audit: filepath.Join(t.TempDir(), "audit.jsonl"),
		Bundle: bundle.Config{URL: srv.URL + "/bundle.tar.gz"}}}
	require.False(t, cfg.Bundled(), "a bundle is not the bundled example")
	out := &syncBuffer{}
	cfg.Stdout = out
	g := startGateway(t, cfg)
	defer func() { require.NoError(t, g.stop()) }()

	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	ctx := t.Context()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "sec04", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: g.url,
		HTTPClient: &http.Client{Transport: mcptest.Bearer{Token: identity.DemoTokenValue, Next: tr}}, DisableStandaloneSSE: true}, nil)
	require.NoError(t, err)
	defer cs.Close()
	list, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	require.Empty(t, list.Tools, "the demo token must be nobody when serving a bundle")
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	require.NoError(t, err)
	require.True(t, res.IsError)
	require.Equal(t, "Error: Unknown tool 'echo'.", res.Content[0].(*mcp.TextContent).Text)
	require.NotContains(t, out.String(), identity.DemoTokenValue, "the welcome must not offer the demo token")

	// Anyone's /healthz names the bundle's manifest revision.
	resp, err := (&http.Client{Transport: tr}).Get(strings.TrimSuffix(g.url, "/mcp") + "/healthz")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.JSONEq(t, `{"status":"ok","revision":"prod-7"}`, string(body))
}
