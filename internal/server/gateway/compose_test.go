package gateway_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/server/gateway"
	"github.com/toolgate/toolgate/internal/server/httpserve"
	"github.com/toolgate/toolgate/toolcall"
)

// baseConfig is a gateway of the bundled example on 127.0.0.1:0 with an
// in-memory ledger, no watching and the audit trail discarded.
func baseConfig(t *testing.T) gateway.Config {
	t.Helper()
	off := false
	s := config.Serve{HTTP: "127.0.0.1:0", Ledger: "memory", Audit: "-", Watch: &off}
	require.NoError(t, s.SetDefaults())
	return gateway.Config{Serve: s, Stdout: nopCloser{io.Discard}, Stderr: io.Discard}
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// TestNewRunClose: New listens (Addr is known before Run), an extra route
// of Config.Routes is served behind the same guard and callers as /mcp,
// with the caller of the request's token, and Close, after Run returns,
// releases the port; a second Close is harmless.
func TestNewRunClose(t *testing.T) {
	t.Parallel()
	ann := &toolcall.Caller{Subject: "ann", Roles: []string{"admin"}}
	cfg := baseConfig(t)
	cfg.Tokens = writeTokens(t, t.TempDir(), ann)
	var built *gateway.Gateway
	cfg.Routes = func(g *gateway.Gateway) map[string]http.Handler {
		built = g
		return map[string]http.Handler{"GET /console": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c := httpserve.RequestCaller(r)
			if c == nil {
				fmt.Fprint(w, "nobody")
				return
			}
			fmt.Fprintf(w, "%s at revision %d", c.Subject, g.Engine().Current().Number())
		})}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g, err := gateway.New(ctx, cfg)
	require.NoError(t, err)
	require.Same(t, g, built, "Routes sees the gateway it is part of")
	addr := g.Addr()
	require.NotNil(t, addr)
	listener := listenerOn(t, addr.(*net.TCPAddr).Port)
	require.NotZero(t, listener, "New listens at Addr")

	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	get := func(token, host string) (int, string) {
		req, err := http.NewRequest("GET", "http://"+addr.String()+"/console", nil)
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if host != "" {
			req.Host = host
		}
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	code, body := get(tokenFor(ann), "")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "ann at revision 1", body)
	code, body = get("", "")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "nobody", body)
	code, _ = get("not-a-token", "")
	require.Equal(t, http.StatusUnauthorized, code, "an unknown token is refused on every route")
	code, _ = get(tokenFor(ann), "evil.example.com")
	require.Equal(t, http.StatusForbidden, code, "the Host guard covers every route")

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after its context was done") // a failure bound only
	}
	require.NoError(t, g.Close())
	require.NoError(t, g.Close())
	require.NotContains(t, listeners(t), listener, "Close releases the listener")
}

// TestNewFailsCleanly: settings that cannot be served fail in New, before
// anything is served, and what New had built is released (New listens
// before it reads the tokens, and no listener is left). Not parallel: it
// compares the listeners of the whole process before and after New.
func TestNewFailsCleanly(t *testing.T) {
	before := listeners(t)
	cfg := baseConfig(t)
	cfg.Tokens = t.TempDir() + "/no-such-tokens.json"
	_, err := gateway.New(context.Background(), cfg)
	require.ErrorContains(t, err, "no-such-tokens.json")
	for inode, port := range listeners(t) {
		_, had := before[inode]
		require.True(t, had, "a failed New left a listener on port %d", port)
	}
}

// TestRunNothingToServe: a gateway with neither stdio nor an HTTP address
// says so from Run instead of blocking.
func TestRunNothingToServe(t *testing.T) {
	t.Parallel()
	cfg := baseConfig(t)
	cfg.HTTP = ""
	on := true
	cfg.Watch = &on
	g, err := gateway.New(context.Background(), cfg)
	require.NoError(t, err)
	require.Nil(t, g.Addr())
	require.ErrorContains(t, g.Run(context.Background()), "nothing to serve")
	require.NoError(t, g.Close())
}
