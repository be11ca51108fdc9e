package gateway_test

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/identity"
	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/server/gateway"
	"github.com/toolgate/toolgate/internal/testkit/oidctest"
)

// waitFor returns once buf holds sub (an event the code under test logs).
func waitFor(t testing.TB, buf *syncBuffer, sub string) {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		changed := buf.Changed()
		if strings.Contains(buf.String(), sub) {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("never logged %q; the log:\n%s", sub, buf.String())
		}
	}
}

// TestSlowKeySetHoldsNeitherStartNorRequests: a
// key-set endpoint that does not answer holds neither the start (the
// gateway is serving while that fetch is still pending, not abandoned by a
// timeout) nor a JWT request (503 with Retry-After while the endpoint has
// still not answered); once it answers, the same token is served without
// a restart.
func TestSlowKeySetHoldsNeitherStartNorRequests(t *testing.T) {
	t.Parallel()
	iss := newJWKSIssuer(t)
	keys, err := os.ReadFile(iss.Path)
	require.NoError(t, err)
	release := make(chan struct{})
	var arrived, abandoned, answered atomic.Int32
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
			abandoned.Add(1)
			return
		}
		answered.Add(1)
		_, _ = w.Write(keys)
	}))
	t.Cleanup(jwks.Close)
	var once atomic.Bool
	open := func() {
		if once.CompareAndSwap(false, true) {
			close(release)
		}
	}
	t.Cleanup(open)

	const issuer = "https://login.example.com"
	g := startIdentity(t, gateway.Config{Stdout: &syncBuffer{},
		Serve: config.Serve{Auth: identity.Settings{Issuer: issuer, JWKS: jwks.URL + "/keys"}}}, oidctest.FreePort(t))
	require.Zero(t, abandoned.Load(), "the start waited for the key set until it gave up")
	require.Zero(t, answered.Load())

	tok := iss.sign(t, issuer, g.resource, `"sub":"alice","roles":["manager"]`)
	for range 3 {
		resp, body := post(t, g.url, "Bearer "+tok, countCall("early"), "Mcp-Protocol-Version", "2026-07-28")
		require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, body)
		require.Equal(t, strconv.Itoa(identity.RetryAfterSeconds), resp.Header.Get("Retry-After"))
	}
	require.Zero(t, answered.Load(), "503 came before the key set answered")
	require.Zero(t, abandoned.Load())

	open()
	g.keysLoaded(t)
	cs, err := connectToken(t, g.url, "2025-11-25", tok)
	require.NoError(t, err, "served once the key set answered")
	require.Equal(t, managerTools, listNames(t, cs))
}

// TestIssuerOnEveryAddressNeedsAResource: with
// an issuer, a gateway listening on every address without auth.resource
// does not start (the resource it would advertise, http://[::]:PORT/mcp
// or http://0.0.0.0:PORT/mcp, is no URI a client uses), for an embedder
// that skipped config validation too; with a resource it starts.
func TestIssuerOnEveryAddressNeedsAResource(t *testing.T) {
	t.Parallel()
	iss := newJWKSIssuer(t)
	for _, addr := range []string{"0.0.0.0:0", "[::]:0", ":0"} {
		t.Run(addr, func(t *testing.T) {
			t.Parallel()
			cfg := gateway.Config{Stdout: &syncBuffer{}, Logger: slog.New(slog.DiscardHandler), Serve: config.Serve{
				HTTP: addr, Ledger: "memory", Audit: os.DevNull,
				Auth: identity.Settings{Issuer: "https://login.example.com", JWKS: iss.Path},
			}}
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			cfg.Ready = func(net.Addr) { cancel() } // started: stop at once, and fail below
			err := gateway.Run(ctx, cfg)
			require.ErrorContains(t, err, "auth.resource (--resource) is required when listening on every address")
		})
	}
}

// TestGatewayEvery401NamesTheMetadata: served
// with an issuer, every 401 of the gateway to a request without a token
// names the Protected Resource Metadata: /mcp, /approvals and the console's
// API alike.
func TestGatewayEvery401NamesTheMetadata(t *testing.T) {
	t.Parallel()
	iss := newJWKSIssuer(t)
	g := startIdentity(t, gateway.Config{Stdout: &syncBuffer{},
		Serve: config.Serve{Auth: identity.Settings{Issuer: "https://login.example.com", JWKS: iss.Path}}}, oidctest.FreePort(t))
	want := `Bearer resource_metadata="` + g.base + `/.well-known/oauth-protected-resource/mcp"`
	resp, body := post(t, g.url, "", countCall("x"), "Mcp-Protocol-Version", "2026-07-28")
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, body)
	require.Equal(t, want, resp.Header.Get("WWW-Authenticate"), "/mcp")
	for _, path := range []string{"/approvals", "/console/api/me", "/console/api/approvals", "/console/api/status"} {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, g.base+path, nil)
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, path)
		require.Equal(t, want, resp.Header.Get("WWW-Authenticate"), path)
	}
}
