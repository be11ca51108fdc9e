package identity_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/identity"
	"github.com/toolgate/toolgate/internal/testkit/testclock"
)

// backgroundVerifier is a WithBackground verifier whose checks run on the
// test's ticks: tick(t) returns once the check before it is done.
func backgroundVerifier(t *testing.T, jwks string, c *testclock.Clock, opts ...identity.Option) (*identity.JWT, func()) {
	t.Helper()
	ticks := make(chan time.Time)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	opts = append([]identity.Option{identity.WithBackground(), identity.WithKeyCheckTicks(ticks),
		identity.WithClock(c.Now), identity.WithLogger(quietLogger())}, opts...)
	v, err := identity.NewJWT(ctx, identity.Settings{Issuer: testIssuer, JWKS: jwks, Resource: testResource}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	// Each send is received once the check before it ended: two sends
	// run one whole check after anything the test changed.
	return v, func() { ticks <- time.Time{}; ticks <- time.Time{} }
}

// TestCachedTokenDroppedWhenItsKeyLeaves: a
// token verified and cached under key k1 is refused once a scheduled check
// of the key set finds k1 gone, though no uncached token came to force a
// fetch; a token of the key that stayed is still accepted.
func TestCachedTokenDroppedWhenItsKeyLeaves(t *testing.T) {
	t.Parallel()
	for name, serve := range map[string]func(t *testing.T, file string) string{
		"file": func(t *testing.T, file string) string { return file },
		"URL": func(t *testing.T, file string) string {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, file) }))
			t.Cleanup(srv.Close)
			return srv.URL + "/keys"
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			k1, k2 := newRSAKey(t, "k1"), newECKey(t, "k2")
			file := newJWKSFile(t, k1, k2)
			c := newClock()
			v, check := backgroundVerifier(t, serve(t, file), c)
			check()
			if err := v.Ready(); err != nil {
				t.Fatal(err)
			}
			old, kept := k1.sign(t, claimsJSON(c.Now(), "")), k2.sign(t, claimsJSON(c.Now(), ""))
			for _, tok := range []string{old, kept} {
				if _, err := v.Verify(t.Context(), tok); err != nil {
					t.Fatal(err)
				}
			}
			writeJWKS(t, file, k2) // the issuer withdraws k1
			check()
			var ite *identity.InvalidTokenError
			if _, err := v.Verify(t.Context(), old); !errors.As(err, &ite) || ite.Reason != `no key of the issuer has kid "k1" for RS256` {
				t.Fatalf("the cached token of the withdrawn key: %v", err)
			}
			if _, err := v.Verify(t.Context(), kept); err != nil {
				t.Fatalf("the token of the key that stayed: %v", err)
			}
		})
	}
}

// TestCachedTokenDroppedWhenItsKeyIsReplaced: a key replaced under the
// same kid is gone too.
func TestCachedTokenDroppedWhenItsKeyIsReplaced(t *testing.T) {
	t.Parallel()
	k1, k1b := newRSAKey(t, "k1"), newRSAKey(t, "k1")
	file := newJWKSFile(t, k1)
	c := newClock()
	v, check := backgroundVerifier(t, file, c)
	check()
	old := k1.sign(t, claimsJSON(c.Now(), ""))
	if _, err := v.Verify(t.Context(), old); err != nil {
		t.Fatal(err)
	}
	writeJWKS(t, file, k1b)
	check()
	var ite *identity.InvalidTokenError
	if _, err := v.Verify(t.Context(), old); !errors.As(err, &ite) || ite.Reason != "signature does not verify" {
		t.Fatalf("the cached token of the replaced key: %v", err)
	}
}

// TestSlowKeySetAnswersAtOnce: a key-set
// endpoint that does not answer neither holds NewJWT nor a token: NewJWT
// returns while the fetch hangs and a token gets ErrUnavailable at once
// (the endpoint has still not answered, so nothing waited for it); once it
// answers, tokens verify without a restart.
func TestSlowKeySetAnswersAtOnce(t *testing.T) {
	t.Parallel()
	k := newECKey(t, "k")
	file := newJWKSFile(t, k)
	arrived, release := make(chan struct{}, 8), make(chan struct{})
	var answered atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		answered.Add(1)
		http.ServeFile(w, r, file)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	c := newClock()
	v, check := backgroundVerifier(t, srv.URL+"/keys", c, identity.WithHTTPClient(&http.Client{}))
	<-arrived // the first fetch hangs
	tok := k.sign(t, claimsJSON(c.Now(), ""))
	for range 3 {
		if _, err := v.Verify(t.Context(), tok); !errors.Is(err, identity.ErrUnavailable) {
			t.Fatalf("while the key set hangs: %v, want ErrUnavailable", err)
		}
	}
	if err := v.Ready(); !errors.Is(err, identity.ErrUnavailable) {
		t.Fatalf("Ready = %v", err)
	}
	if n := answered.Load(); n != 0 {
		t.Fatalf("the endpoint answered %d times before it was released", n)
	}
	if len(arrived) != 0 {
		t.Fatal("a token made a fetch of its own")
	}
	close(release)
	check()
	if _, err := v.Verify(t.Context(), tok); err != nil {
		t.Fatalf("once the key set answered: %v", err)
	}
}

// TestTokenWithoutKidTriesEveryKey: a token without kid is tried against
// every key of the set for its algorithm, in turn: one signed by the
// second key verifies, one signed by neither does not.
func TestTokenWithoutKidTriesEveryKey(t *testing.T) {
	t.Parallel()
	k1, k2, other := newRSAKey(t, "k1"), newRSAKey(t, "k2"), newRSAKey(t, "k3")
	file := newJWKSFile(t, k1, k2)
	c := newClock()
	v := fileVerifier(t, file, c, nil)
	payload := claimsJSON(c.Now(), "")
	for _, k := range []testKey{k1, k2} {
		if _, err := v.Verify(t.Context(), sign(t, payload, k.alg, k.priv, "")); err != nil {
			t.Fatalf("signed by %s, no kid: %v", k.kid, err)
		}
	}
	var ite *identity.InvalidTokenError
	if _, err := v.Verify(t.Context(), sign(t, payload, other.alg, other.priv, "")); !errors.As(err, &ite) || ite.Reason != "signature does not verify" {
		t.Fatalf("signed by another key, no kid: %v", err)
	}
}

// TestScheduledCheckLogsOnlyChanges: the background check every
// KeyCheckInterval logs "signing keys loaded" (Info) when the set changed
// (first load, a key added, a key gone), not when it is the same.
func TestScheduledCheckLogsOnlyChanges(t *testing.T) {
	t.Parallel()
	k1, k2 := newECKey(t, "k1"), newECKey(t, "k2")
	file := newJWKSFile(t, k1)
	buf := &lockedBuffer{b: &bytes.Buffer{}}
	c := newClock()
	_, check := backgroundVerifier(t, file, c, identity.WithLogger(slog.New(slog.NewTextHandler(buf, nil))))
	loaded := func() int {
		buf.mu.Lock()
		defer buf.mu.Unlock()
		return strings.Count(buf.b.String(), "signing keys loaded")
	}
	for _, step := range []struct {
		name string
		keys []testKey
		want int
	}{
		{"unchanged", []testKey{k1}, 1},
		{"a key added", []testKey{k1, k2}, 2},
		{"unchanged again", []testKey{k1, k2}, 2},
		{"a key gone", []testKey{k2}, 3},
	} {
		writeJWKS(t, file, step.keys...)
		check()
		if got := loaded(); got != step.want {
			t.Fatalf("%s: %d lines, want %d:\n%s", step.name, got, step.want, buf.b.String())
		}
	}
}
