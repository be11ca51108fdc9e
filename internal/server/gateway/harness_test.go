package gateway_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/identity"
	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/server/gateway"
	"github.com/toolgate/toolgate/internal/testkit/gatewaytest"
	"github.com/toolgate/toolgate/internal/testkit/mcptest"
	"github.com/toolgate/toolgate/toolcall"
	"github.com/toolgate/toolgate/upstream"
)

// Protocol revisions the go-sdk serves (docs/contract.md §6).
var protocols = []string{"2025-06-18", "2025-11-25", "2026-07-28"}

// tokenFor is the bearer token the tests give a caller.
func tokenFor(c *toolcall.Caller) string { return "token-of-" + c.Subject }

// writeTokens writes a tokens file (docs/contract.md §8) for callers.
func writeTokens(t testing.TB, dir string, callers ...*toolcall.Caller) string {
	t.Helper()
	m := map[string]identity.TokenEntry{}
	for _, c := range callers {
		m[tokenFor(c)] = identity.TokenEntry{Subject: c.Subject, Roles: c.Roles}
	}
	return mcptest.WriteTokens(t, dir, m)
}

// writeSource writes registry as dir/registry.yaml and grant as the one
// policy file dir/rego/grant.rego, and returns their paths.
func writeSource(t testing.TB, dir, registry, grant string) (reg, pol string) {
	t.Helper()
	reg = filepath.Join(dir, "registry.yaml")
	require.NoError(t, os.WriteFile(reg, []byte(registry), 0o600))
	pol = filepath.Join(dir, "rego")
	require.NoError(t, os.MkdirAll(pol, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(pol, "grant.rego"), []byte(grant), 0o600))
	return reg, pol
}

// running is a gateway serving HTTP.
type running struct {
	addr net.Addr // the listener's
	url  string
	stop func() error // shuts down and returns Run's error
}

// startGateway runs gateway.Run with cfg on 127.0.0.1:0 until stop or the
// end of the test.
func startGateway(t testing.TB, cfg gateway.Config) *running {
	t.Helper()
	cfg.HTTP = "127.0.0.1:0"
	return serveGateway(t, cfg)
}

// serveGateway runs gateway.Run with cfg on the address cfg names until
// stop or the end of the test.
func serveGateway(t testing.TB, cfg gateway.Config) *running {
	t.Helper()
	if cfg.EvalTimeout == 0 {
		// Tests compare decisions: a policy evaluation that a loaded
		// machine slows past the 250 ms default would fail closed and
		// change one. A minute is only a failure bound.
		cfg.EvalTimeout = time.Minute
	}
	g := gatewaytest.Serve(t, cfg)
	return &running{addr: g.Addr, url: g.URL, stop: g.Stop}
}

// connect opens a go-sdk streamable HTTP session under proto as caller (nil:
// nobody, no Authorization header). The transport's idle connections are
// closed with the session.
func connect(t testing.TB, ctx context.Context, url, proto string, caller *toolcall.Caller) *mcp.ClientSession {
	t.Helper()
	tr := &http.Transport{}
	var rt http.RoundTripper = tr
	if caller != nil {
		rt = mcptest.Bearer{Token: tokenFor(caller), Next: tr}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "gateway-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: rt}, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: proto})
	require.NoError(t, err, "connect under %s", proto)
	t.Cleanup(func() { _ = cs.Close(); tr.CloseIdleConnections() })
	return cs
}

// importGateway is a gateway serving HTTP (memory ledger, no watch) whose
// upstreams import into sections "upstream:NAME" that role may see.
type importGateway struct {
	role string // "admin" when empty
	// policy maps file names of the policy directory to Rego; grant.rego
	// is the empty toolgate.grant package unless given.
	policy  map[string]string
	callers []*toolcall.Caller // the holders of its tokens
	ups     []upstream.Settings
}

func (s importGateway) start(t *testing.T) *running {
	t.Helper()
	role := s.role
	if role == "" {
		role = "admin"
	}
	registry := "sections:\n"
	for _, u := range s.ups {
		registry += "  \"upstream:" + u.Name + "\": { roles: [" + role + "] }\n"
	}
	if len(s.ups) == 0 {
		registry = ""
	}
	grant, ok := s.policy["grant.rego"]
	if !ok {
		grant = "package toolgate.grant\n"
	}
	dir := t.TempDir()
	reg, pol := writeSource(t, dir, registry+"tools: []\n", grant)
	for name, rego := range s.policy {
		require.NoError(t, os.WriteFile(filepath.Join(pol, name), []byte(rego), 0o600))
	}
	watch := false
	return startGateway(t, gateway.Config{
		Serve: config.Serve{Registry: reg, Policy: pol, Tokens: writeTokens(t, dir, s.callers...),
			Upstreams: s.ups, Ledger: "memory", Audit: filepath.Join(dir, "audit.jsonl"), Watch: &watch},
		Stderr: io.Discard,
	})
}

// recorded opens a session of caller under proto (no standalone stream)
// whose response bodies rec records, the handshake's already taken.
func recorded(t *testing.T, url, proto string, caller *toolcall.Caller) (cs *mcp.ClientSession, rec *responses) {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	rec = &responses{next: mcptest.Bearer{Token: tokenFor(caller), Next: tr}}
	client := mcp.NewClient(&mcp.Implementation{Name: "gateway-test", Version: "1"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true,
		HTTPClient: &http.Client{Transport: rec}}, &mcp.ClientSessionOptions{ProtocolVersion: proto})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	rec.take()
	return cs, rec
}
