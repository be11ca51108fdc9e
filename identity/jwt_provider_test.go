package identity_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/testkit/oidctest"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"

	"github.com/toolgate/toolgate/identity"
	"github.com/toolgate/toolgate/internal/testkit/testclock"
)

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newVerifier returns a verifier trusting p's issuer for p.Resource (and
// p.ResourceES), with the test clock c.
func newVerifier(t *testing.T, p *oidctest.Provider, c *testclock.Clock, mod func(*identity.Settings)) *identity.JWT {
	t.Helper()
	s := identity.Settings{Issuer: p.Issuer, Resource: p.Resource, Audiences: []string{p.Resource, p.ResourceES}}
	if mod != nil {
		mod(&s)
	}
	v, err := identity.NewJWT(t.Context(), s, identity.WithClock(c.Now), identity.WithLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestProviderTokenIsCaller: a token from a real OpenID provider becomes
// the caller its claims say, roles from the configured claim, whatever its
// shape (array, space-separated string, nested path, absent).
func TestProviderTokenIsCaller(t *testing.T) {
	t.Parallel()
	p := startProvider(t, 0)
	c := newClock()
	tests := []struct {
		name, client, rolesClaim, resource string
		subject                            string
		roles                              []string
	}{
		{"array", "alice", "", p.Resource, "alice-app", []string{"manager", "reader"}},
		{"nested path", "alice", "realm_access.roles", p.Resource, "alice-app", []string{"manager", "reader"}},
		{"space-separated string", "bob", "roles", p.Resource, "bob-app", []string{"reader"}},
		{"no roles claim", "nobody", "", p.Resource, "nobody-app", nil},
		{"ES256", "alice", "", p.ResourceES, "alice-app", []string{"manager", "reader"}},
		{"scope as roles", "bob", "scope", p.Resource, "bob-app", []string{"tools:read", "tools:call"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := newVerifier(t, p, c, func(s *identity.Settings) { s.RolesClaim = tt.rolesClaim })
			tok := oidctest.TokenFrom(t, p.Issuer, tt.client, tt.resource)
			caller, err := v.Verify(t.Context(), tok)
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if caller.Subject != tt.subject || !reflect.DeepEqual(caller.Roles, tt.roles) {
				t.Errorf("caller = %q %q, want %q %q", caller.Subject, caller.Roles, tt.subject, tt.roles)
			}
			for _, k := range []string{"iss", "aud", "exp", "scope", "client_id"} {
				if _, ok := caller.Claims[k]; !ok {
					t.Errorf("claims lack %q: %v", k, caller.Claims)
				}
			}
			if _, ok := caller.Claims["exp"].(json.Number); !ok {
				t.Errorf("claims.exp = %T, want json.Number (exact)", caller.Claims["exp"])
			}
		})
	}
}

// TestProviderChainHTTP: over HTTP, the chain serves a provider's token as
// its caller, answers a request without a token with ErrNoToken (401 and
// resource_metadata) and a tokens-file token by its entry.
func TestProviderChainHTTP(t *testing.T) {
	t.Parallel()
	p := startProvider(t, 0)
	v := newVerifier(t, p, newClock(), nil)
	chain := identity.Chain{Tokens: fakeTokens{"static-token": "ops"}, JWT: v}
	metaURL := identity.MetadataURL(p.Resource)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		caller, err := chain.Authenticate(r.Context(), r)
		if err != nil {
			status, challenge := identity.Answer(err, metaURL)
			if challenge != "" {
				w.Header().Set("WWW-Authenticate", challenge)
			}
			w.WriteHeader(status)
			return
		}
		_, _ = io.WriteString(w, caller.Subject)
	}))
	t.Cleanup(srv.Close)

	get := func(authz string) (int, string, string) {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL, nil)
		if authz != "" {
			req.Header.Set("Authorization", authz)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("WWW-Authenticate"), string(b)
	}
	tok := oidctest.TokenFrom(t, p.Issuer, "alice", p.Resource)
	for _, tt := range []struct {
		name, authz string
		status      int
		challenge   string
		body        string
	}{
		{"jwt", "Bearer " + tok, 200, "", "alice-app"},
		{"tokens file first", "Bearer static-token", 200, "", "ops"},
		{"no token", "", 401, `Bearer resource_metadata="` + metaURL + `"`, ""},
		{"bad token", "Bearer not.a.jwt", 401, `Bearer error="invalid_token", resource_metadata="` + metaURL + `"`, ""},
	} {
		status, challenge, body := get(tt.authz)
		if status != tt.status || challenge != tt.challenge || body != tt.body {
			t.Errorf("%s: got %d %q %q, want %d %q %q", tt.name, status, challenge, body, tt.status, tt.challenge, tt.body)
		}
	}
}

// TestProviderRefusals: every token docs/contract.md §12 refuses is an invalid token,
// each built from a real token of the provider.
func TestProviderRefusals(t *testing.T) {
	t.Parallel()
	p := startProvider(t, 0)
	c := newClock()
	v := newVerifier(t, p, c, nil)
	good := oidctest.TokenFrom(t, p.Issuer, "alice", p.Resource)
	if _, err := v.Verify(t.Context(), good); err != nil {
		t.Fatalf("a good token: %v", err)
	}
	parts := strings.Split(good, ".")
	payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
	pub := providerKey(t, p.Issuer, "rsa-1")
	der, _ := x509.MarshalPKIXPublicKey(pub)
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	foreignRSA, _ := rsa.GenerateKey(rand.Reader, 2048)
	foreignEC, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)

	tests := []struct {
		name   string
		token  func() string
		reason string
	}{
		{"another audience", func() string { return oidctest.TokenFrom(t, p.Issuer, "alice", p.OtherResource) }, "aud holds no accepted audience"},
		{"another issuer, same keys", func() string { return oidctest.TokenFrom(t, p.Other, "alice", p.Resource) }, "iss is not the issuer"},
		{"a key not in the set, known kid", func() string { return sign(t, payload, jwa.RS256(), foreignRSA, "rsa-1") }, "signature does not verify"},
		{"a key not in the set, unknown kid", func() string { return sign(t, payload, jwa.RS256(), foreignRSA, "mallory") }, `no key of the issuer has kid "mallory" for RS256`},
		{"an EC key not in the set", func() string { return sign(t, payload, jwa.ES256(), foreignEC, "ec-1") }, "signature does not verify"},
		{"alg none", func() string { return unsigned(payload, `{"alg":"none","kid":"rsa-1"}`) }, `algorithm "none" is not accepted (asymmetric only: RS*, PS*, ES256, ES384, EdDSA)`},
		{"alg none, no kid", func() string { return unsigned(payload, `{"alg":"none"}`) }, `algorithm "none" is not accepted (asymmetric only: RS*, PS*, ES256, ES384, EdDSA)`},
		{"HS256 with the public key PEM as secret", func() string { return sign(t, payload, jwa.HS256(), pubPEM, "rsa-1") }, `algorithm "HS256" is not accepted (asymmetric only: RS*, PS*, ES256, ES384, EdDSA)`},
		{"HS256 with the public key DER as secret", func() string { return sign(t, payload, jwa.HS256(), der, "rsa-1") }, `algorithm "HS256" is not accepted (asymmetric only: RS*, PS*, ES256, ES384, EdDSA)`},
		{"payload altered", func() string {
			return parts[0] + "." + base64.RawURLEncoding.EncodeToString(bytes.Replace(payload, []byte("alice-app"), []byte("admin-app"), 1)) + "." + parts[2]
		}, "signature does not verify"},
		{"RS256 token claiming PS256", func() string {
			h, _ := base64.RawURLEncoding.DecodeString(parts[0])
			return base64.RawURLEncoding.EncodeToString(bytes.Replace(h, []byte("RS256"), []byte("PS256"), 1)) + "." + parts[1] + "." + parts[2]
		}, `no key of the issuer has kid "rsa-1" for PS256`}, // the key says alg RS256
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := v.Verify(t.Context(), tt.token())
			var ite *identity.InvalidTokenError
			if !errors.As(err, &ite) || !errors.Is(err, identity.ErrInvalidToken) {
				t.Fatalf("Verify: %v, want an invalid token", err)
			}
			if ite.Reason != tt.reason {
				t.Errorf("reason = %q, want %q", ite.Reason, tt.reason)
			}
			if strings.Contains(err.Error(), parts[2]) {
				t.Errorf("the error holds the token: %v", err)
			}
		})
	}

	// Expiry: the provider's tokens live an hour; past exp and the 60 s
	// leeway the same token is refused, also though it was cached.
	t.Run("expired", func(t *testing.T) {
		ec := newClock()
		ev := newVerifier(t, p, ec, nil)
		if _, err := ev.Verify(t.Context(), good); err != nil {
			t.Fatal(err)
		}
		ec.Advance(time.Hour + 30*time.Second) // past exp, within the leeway
		if _, err := ev.Verify(t.Context(), good); err != nil {
			t.Fatalf("within the leeway: %v", err)
		}
		ec.Advance(time.Minute)
		_, err := ev.Verify(t.Context(), good)
		var ite *identity.InvalidTokenError
		if !errors.As(err, &ite) || ite.Reason != "token expired" {
			t.Fatalf("past exp and leeway: %v, want token expired", err)
		}
	})
}

// TestProviderKeyRotation: the provider switches to a new signing key;
// its new tokens verify without a restart once the 30 s refetch limit
// allows, and tokens signed with the old key still verify.
func TestProviderKeyRotation(t *testing.T) {
	t.Parallel()
	p := startProvider(t, 0)
	c := newClock()
	v := newVerifier(t, p, c, nil)
	old := oidctest.TokenFrom(t, p.Issuer, "alice", p.Resource)
	if _, err := v.Verify(t.Context(), old); err != nil {
		t.Fatal(err)
	}
	p.Rotate(t)
	fresh := oidctest.TokenFrom(t, p.Issuer, "bob", p.Resource)
	if kid := headerKid(t, fresh); kid != "rsa-2" {
		t.Fatalf("after rotation the provider signs with %q", kid)
	}
	// The key set was fetched when v was made: within 30 s an unknown kid
	// does not make it fetch again.
	if _, err := v.Verify(t.Context(), fresh); !errors.Is(err, identity.ErrInvalidToken) {
		t.Fatalf("within the refetch limit: %v, want an invalid token", err)
	}
	c.Advance(identity.RefetchInterval)
	caller, err := v.Verify(t.Context(), fresh)
	if err != nil {
		t.Fatalf("after the refetch limit: %v", err)
	}
	if caller.Subject != "bob-app" {
		t.Errorf("subject = %q", caller.Subject)
	}
	if _, err := v.Verify(t.Context(), old); err != nil {
		t.Errorf("the old key's token: %v", err)
	}
}

// TestProviderDiscoveryDown: the issuer is unreachable when the verifier is
// made. Tokens get ErrUnavailable (the transport answers 503, not 401),
// Ready says why, and once the issuer is up the verifier serves, without a
// restart, retrying at most every RetryInterval.
func TestProviderDiscoveryDown(t *testing.T) {
	t.Parallel()
	oidctest.Require(t)
	port := oidctest.FreePort(t)
	issuer := "http://127.0.0.1:" + itoa(port)
	c := newClock()
	var logs bytes.Buffer
	v, err := identity.NewJWT(t.Context(), identity.Settings{Issuer: issuer, Resource: "http://127.0.0.1/mcp"},
		identity.WithClock(c.Now), identity.WithLogger(slog.New(slog.NewTextHandler(&lockedBuffer{b: &logs}, nil))))
	if err != nil {
		t.Fatalf("NewJWT with the issuer down: %v", err)
	}
	if err := v.Ready(); !errors.Is(err, identity.ErrUnavailable) {
		t.Fatalf("Ready = %v, want ErrUnavailable", err)
	}
	if !strings.Contains(logs.String(), "cannot fetch the issuer's signing keys") || !strings.Contains(logs.String(), issuer) {
		t.Errorf("log does not say the issuer is unreachable:\n%s", logs.String())
	}
	p := startProvider(t, port)
	tok := oidctest.TokenFrom(t, p.Issuer, "alice", p.Resource)
	if _, err := v.Verify(t.Context(), tok); !errors.Is(err, identity.ErrUnavailable) {
		t.Fatalf("before the retry interval: %v, want ErrUnavailable", err)
	}
	c.Advance(identity.RetryInterval)
	caller, err := v.Verify(t.Context(), tok)
	if err != nil {
		t.Fatalf("once reachable: %v", err)
	}
	if caller.Subject != "alice-app" || v.Ready() != nil {
		t.Errorf("caller %q, Ready %v", caller.Subject, v.Ready())
	}
}

// providerKey fetches the provider's public key kid.
func providerKey(t *testing.T, issuer, kid string) *rsa.PublicKey {
	t.Helper()
	set, err := jwk.Fetch(t.Context(), issuer+"/jwks")
	if err != nil {
		t.Fatal(err)
	}
	k, ok := set.LookupKeyID(kid)
	if !ok {
		t.Fatalf("no key %q", kid)
	}
	var pub rsa.PublicKey
	if err := jwk.Export(k, &pub); err != nil {
		t.Fatal(err)
	}
	return &pub
}

// sign signs payload as a compact JWS with alg, key and kid.
func sign(t testing.TB, payload []byte, alg jwa.SignatureAlgorithm, key any, kid string) string {
	t.Helper()
	h := jws.NewHeaders()
	if kid != "" {
		_ = h.Set(jws.KeyIDKey, kid)
	}
	b, err := jws.Sign(payload, jws.WithKey(alg, key, jws.WithProtectedHeaders(h)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// unsigned builds an `alg: none` token by hand: no library makes one.
func unsigned(payload []byte, header string) string {
	enc := base64.RawURLEncoding
	return enc.EncodeToString([]byte(header)) + "." + enc.EncodeToString(payload) + "."
}

func headerKid(t *testing.T, token string) string {
	t.Helper()
	h, _ := base64.RawURLEncoding.DecodeString(strings.Split(token, ".")[0])
	var v struct{ Kid string }
	_ = json.Unmarshal(h, &v)
	return v.Kid
}

type lockedBuffer struct {
	mu lockedWriterMu
	b  *bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
