package identity_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/toolgate/toolgate/identity"
)

// TestRefetchNotSpentByACancelledRequest: the key-set fetch an unknown kid
// causes is rate limited (one per RefetchInterval), so it must not run on
// the context of the request that caused it. Otherwise anyone, without
// credentials, sends a token with an unknown kid and hangs up at once:
// the fetch fails, the rate limit is spent, and the issuer's new key is
// not fetched for another 30 s — every 30 s, so a rotation never lands.
func TestRefetchNotSpentByACancelledRequest(t *testing.T) {
	t.Parallel()
	k1, k2 := newRSAKey(t, "k1"), newRSAKey(t, "k2")
	keys := newJWKSFile(t, k1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeFile(w, r, keys)
	}))
	t.Cleanup(srv.Close)
	c := newClock()
	v, err := identity.NewJWT(t.Context(), identity.Settings{Issuer: testIssuer, JWKS: srv.URL + "/keys", Resource: testResource},
		identity.WithClock(c.Now), identity.WithLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Ready(); err != nil {
		t.Fatal(err)
	}
	c.Advance(identity.RefetchInterval) // the start's fetch is not the limit
	writeJWKS(t, keys, k1, k2)          // the issuer rotates

	gone, cancel := context.WithCancel(t.Context())
	cancel() // the attacker's request: its connection already closed
	_, _ = v.Verify(gone, k2.sign(t, claimsJSON(c.Now(), "")))

	if _, err := v.Verify(t.Context(), k2.sign(t, claimsJSON(c.Now(), ""))); err != nil {
		t.Fatalf("a token of the rotated key, after a cancelled request spent the refetch: %v", err)
	}
}
