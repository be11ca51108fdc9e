package identity_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/toolgate/toolgate/identity"
)

// TestDiscoveryRFC8414AndRefetchLimit: an issuer with a path that serves
// only RFC 8414 metadata (well-known inserted before the path) is found;
// tokens with unknown kids make the verifier fetch the key set again at
// most once per RefetchInterval, however many come.
func TestDiscoveryRFC8414AndRefetchLimit(t *testing.T) {
	t.Parallel()
	k1, k2 := newRSAKey(t, "k1"), newRSAKey(t, "k2")
	dir := t.TempDir()
	keys := filepath.Join(dir, "jwks.json")
	writeJWKS(t, keys, k1)
	var fetches atomic.Int32
	mux := http.NewServeMux()
	var issuer string
	mux.HandleFunc("GET /.well-known/oauth-authorization-server/tenant", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": issuer, "jwks_uri": issuer + "/keys"})
	})
	mux.HandleFunc("GET /tenant/keys", func(w http.ResponseWriter, _ *http.Request) {
		fetches.Add(1)
		b, _ := os.ReadFile(keys)
		_, _ = w.Write(b)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	issuer = srv.URL + "/tenant"

	c := newClock()
	v, err := identity.NewJWT(t.Context(), identity.Settings{Issuer: issuer, Resource: testResource},
		identity.WithClock(c.Now), identity.WithLogger(quietLogger()))
	if err != nil || v.Ready() != nil {
		t.Fatalf("NewJWT: %v, Ready: %v", err, v.Ready())
	}
	claims := func() []byte {
		return []byte(`{"iss":"` + issuer + `","sub":"a","aud":"` + testResource + `","exp":` + itoa(int(c.Now().Unix())+3600) + `}`)
	}
	if _, err := v.Verify(t.Context(), k1.sign(t, claims())); err != nil {
		t.Fatal(err)
	}
	writeJWKS(t, keys, k1, k2)
	for range 5 {
		if _, err := v.Verify(t.Context(), k2.sign(t, claims())); !errors.Is(err, identity.ErrInvalidToken) {
			t.Fatalf("unknown kid within the limit: %v", err)
		}
	}
	if n := fetches.Load(); n != 1 {
		t.Errorf("%d fetches of the key set within 30 s, want 1 (at start)", n)
	}
	c.Advance(identity.RefetchInterval)
	if _, err := v.Verify(t.Context(), k2.sign(t, claims())); err != nil {
		t.Fatalf("after the limit: %v", err)
	}
	if n := fetches.Load(); n != 2 {
		t.Errorf("%d fetches, want 2", n)
	}
}

// TestJWKSURL: keys from a JWKS URL, no discovery.
func TestJWKSURL(t *testing.T) {
	t.Parallel()
	k := newRSAKey(t, "k")
	keys := newJWKSFile(t, k)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/keys" {
			http.NotFound(w, r)
			return
		}
		http.ServeFile(w, r, keys)
	}))
	t.Cleanup(srv.Close)
	c := newClock()
	v, err := identity.NewJWT(t.Context(), identity.Settings{Issuer: testIssuer, JWKS: srv.URL + "/keys", Resource: testResource},
		identity.WithClock(c.Now), identity.WithLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	caller, err := v.Verify(t.Context(), k.sign(t, claimsJSON(c.Now(), "")))
	if err != nil || caller.Subject != "alice" {
		t.Fatalf("Verify: %v %v", caller, err)
	}
}

// TestDiscoveryIssuerMismatch: metadata naming another issuer is refused
// (RFC 8414 §3.3): no key set, ErrUnavailable.
func TestDiscoveryIssuerMismatch(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": "https://evil.example", "jwks_uri": "https://evil.example/keys"})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	v, err := identity.NewJWT(t.Context(), identity.Settings{Issuer: srv.URL, Resource: testResource}, identity.WithLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Ready(); !errors.Is(err, identity.ErrUnavailable) {
		t.Fatalf("Ready = %v", err)
	}
}
