package identity_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"

	"github.com/toolgate/toolgate/identity"
	"github.com/toolgate/toolgate/internal/testkit/testclock"
)

const (
	testIssuer   = "https://idp.example.com/realms/acme"
	testResource = "https://tools.example.com/mcp"
)

// testKey is a signing key of a JWKS file.
type testKey struct {
	kid  string
	alg  jwa.SignatureAlgorithm
	priv crypto.Signer
}

func newRSAKey(t testing.TB, kid string) testKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return testKey{kid, jwa.RS256(), k}
}

func newECKey(t testing.TB, kid string) testKey {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	return testKey{kid, jwa.ES256(), k}
}

func newEdKey(t testing.TB, kid string) testKey {
	_, k, _ := ed25519.GenerateKey(rand.Reader)
	return testKey{kid, jwa.EdDSA(), k}
}

// writeJWKS writes the public keys of keys as a JWK Set file.
// newJWKSFile writes keys' public halves as a JWKS file in a directory of
// the test's own, and returns its path.
func newJWKSFile(t testing.TB, keys ...testKey) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "jwks.json")
	writeJWKS(t, path, keys...)
	return path
}

func writeJWKS(t testing.TB, path string, keys ...testKey) {
	t.Helper()
	set := jwk.NewSet()
	for _, k := range keys {
		pub, err := jwk.Import(k.priv.Public())
		if err != nil {
			t.Fatal(err)
		}
		_ = pub.Set(jwk.KeyIDKey, k.kid)
		_ = set.AddKey(pub)
	}
	b, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// claimsJSON is a valid claims set for testIssuer and testResource at now,
// with extra members appended verbatim (a JSON fragment, leading comma).
func claimsJSON(now time.Time, extra string) []byte {
	return fmt.Appendf(nil, `{"iss":%q,"sub":"alice","aud":%q,"iat":%d,"exp":%d,"roles":["manager"]%s}`,
		testIssuer, testResource, now.Unix(), now.Add(time.Hour).Unix(), extra)
}

func (k testKey) sign(t testing.TB, payload []byte) string {
	return sign(t, payload, k.alg, k.priv, k.kid)
}

func fileVerifier(t *testing.T, path string, c *testclock.Clock, mod func(*identity.Settings)) *identity.JWT {
	t.Helper()
	s := identity.Settings{Issuer: testIssuer, JWKS: path, Resource: testResource}
	if mod != nil {
		mod(&s)
	}
	v, err := identity.NewJWT(t.Context(), s, identity.WithClock(c.Now), identity.WithLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Ready(); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestJWKSFileClaims: tokens signed with the keys of a JWKS file, with
// claims of every shape; what cannot be read exactly is refused.
func TestJWKSFileClaims(t *testing.T) {
	t.Parallel()
	rsaKey, ecKey, edKey := newRSAKey(t, "r"), newECKey(t, "e"), newEdKey(t, "d")
	path := newJWKSFile(t, rsaKey, ecKey, edKey)
	c := newClock()
	now := c.Now()
	v := fileVerifier(t, path, c, nil)

	long := `"` + strings.Repeat("x", 5000) + `"`
	var many strings.Builder
	for i := range 40 {
		fmt.Fprintf(&many, `,"c%02d":%d`, i, i)
	}
	tests := []struct {
		name    string
		key     testKey
		payload []byte
		reason  string   // empty: accepted
		roles   []string // when accepted
		check   func(t *testing.T, claims map[string]any)
	}{
		{name: "RS256", key: rsaKey, payload: claimsJSON(now, ""), roles: []string{"manager"}},
		{name: "ES256", key: ecKey, payload: claimsJSON(now, ""), roles: []string{"manager"}},
		{name: "EdDSA", key: edKey, payload: claimsJSON(now, ""), roles: []string{"manager"}},
		{name: "exact numbers", key: rsaKey, payload: claimsJSON(now, `,"big":123456789012345678901234567890,"f":1.10`), roles: []string{"manager"},
			check: func(t *testing.T, c map[string]any) {
				if c["big"] != json.Number("123456789012345678901234567890") || c["f"] != json.Number("1.10") {
					t.Errorf("numbers = %v %v", c["big"], c["f"])
				}
			}},
		{name: "whole, not bounded like _meta", key: rsaKey, payload: claimsJSON(now, `,"long":`+long+`,"deep":{"a":{"b":{"c":{"d":1}}}}`+many.String()), roles: []string{"manager"},
			check: func(t *testing.T, c map[string]any) {
				if len(c) != 48 {
					t.Errorf("%d claims, want all 48", len(c))
				}
				if c["long"] != long[1:len(long)-1] {
					t.Error("a claim over 4096 characters was not kept whole")
				}
				if !reflect.DeepEqual(c["deep"], map[string]any{"a": map[string]any{"b": map[string]any{"c": map[string]any{"d": json.Number("1")}}}}) {
					t.Errorf("a claim deeper than 4 levels = %v", c["deep"])
				}
				if c["c39"] != json.Number("39") {
					t.Errorf("c39 (the 48th) = %v", c["c39"])
				}
			}},
		{name: "lone surrogate escape", key: rsaKey, payload: claimsJSON(now, `,"groups":["\ud800suspended"]`), reason: "claims cannot be represented exactly"},
		{name: "NUL in the subject", key: rsaKey, payload: []byte(fmt.Sprintf(`{"iss":%q,"aud":%q,"exp":%d,"sub":"alice\u0000x"}`, testIssuer, testResource, now.Add(time.Hour).Unix())), reason: `subject claim "sub" holds control character U+0000`},
		{name: "newline in the subject", key: rsaKey, payload: []byte(fmt.Sprintf(`{"iss":%q,"aud":%q,"exp":%d,"sub":"alice\nroot"}`, testIssuer, testResource, now.Add(time.Hour).Unix())), reason: `subject claim "sub" holds control character U+000A`},
		{name: "bidi override in the subject", key: rsaKey, payload: []byte(fmt.Sprintf(`{"iss":%q,"aud":%q,"exp":%d,"sub":"ali\u202ece"}`, testIssuer, testResource, now.Add(time.Hour).Unix())), reason: `subject claim "sub" holds control character U+202E`},
		{name: "NUL in a role", key: rsaKey, payload: []byte(fmt.Sprintf(`{"iss":%q,"aud":%q,"exp":%d,"sub":"a","roles":["reader","admin\u0000ww"]}`, testIssuer, testResource, now.Add(time.Hour).Unix())), reason: `roles claim "roles" holds a role with control character U+0000`},
		{name: "DEL in a space-separated role", key: rsaKey, payload: []byte(fmt.Sprintf(`{"iss":%q,"aud":%q,"exp":%d,"sub":"a","roles":"reader admin\u007f"}`, testIssuer, testResource, now.Add(time.Hour).Unix())), reason: `roles claim "roles" holds a role with control character U+007F`},
		{name: "non-ASCII names are fine", key: rsaKey, payload: []byte(fmt.Sprintf(`{"iss":%q,"aud":%q,"exp":%d,"sub":"zoë@example.com","roles":["gérant"]}`, testIssuer, testResource, now.Add(time.Hour).Unix())), roles: []string{"gérant"}},
		{name: "number beyond range", key: rsaKey, payload: claimsJSON(now, `,"n":1e99999`), reason: "claims: a number the policy engine cannot represent exactly"},
		{name: "number beyond range, deep", key: rsaKey, payload: claimsJSON(now, `,"n":[[[[[[1e-99999]]]]]]`), reason: "claims: a number the policy engine cannot represent exactly"},
		{name: "duplicate member", key: rsaKey, payload: claimsJSON(now, `,"sub":"admin"`), reason: `claims: member "sub" appears twice`},
		{name: "duplicate nested member", key: rsaKey, payload: claimsJSON(now, `,"o":{"a":1,"a":2}`), reason: `claims: member "a" appears twice`},
		{name: "no subject", key: rsaKey, payload: []byte(fmt.Sprintf(`{"iss":%q,"aud":%q,"exp":%d}`, testIssuer, testResource, now.Add(time.Hour).Unix())), reason: `subject claim "sub" is missing or not a non-empty string`},
		{name: "empty subject", key: rsaKey, payload: []byte(fmt.Sprintf(`{"iss":%q,"aud":%q,"exp":%d,"sub":" "}`, testIssuer, testResource, now.Add(time.Hour).Unix())), reason: `subject claim "sub" is missing or not a non-empty string`},
		{name: "subject a number", key: rsaKey, payload: []byte(fmt.Sprintf(`{"iss":%q,"aud":%q,"exp":%d,"sub":7}`, testIssuer, testResource, now.Add(time.Hour).Unix())), reason: `subject claim "sub" is missing or not a non-empty string`},
		{name: "roles not strings", key: rsaKey, payload: []byte(fmt.Sprintf(`{"iss":%q,"aud":%q,"exp":%d,"sub":"a","roles":["x",1]}`, testIssuer, testResource, now.Add(time.Hour).Unix())), reason: `roles claim "roles" holds a value that is not a string`},
		{name: "roles an object", key: rsaKey, payload: []byte(fmt.Sprintf(`{"iss":%q,"aud":%q,"exp":%d,"sub":"a","roles":{}}`, testIssuer, testResource, now.Add(time.Hour).Unix())), reason: `roles claim "roles" is neither an array of strings nor a string`},
		{name: "roles null", key: rsaKey, payload: []byte(fmt.Sprintf(`{"iss":%q,"aud":[%q,"x"],"exp":%d,"sub":"a","roles":null}`, testIssuer, testResource, now.Add(time.Hour).Unix()))},
		{name: "no exp", key: rsaKey, payload: []byte(fmt.Sprintf(`{"iss":%q,"aud":%q,"sub":"a"}`, testIssuer, testResource)), reason: "no exp"},
		{name: "nbf in the future", key: rsaKey, payload: claimsJSON(now, fmt.Sprintf(`,"nbf":%d`, now.Add(2*time.Minute).Unix())), reason: "token not valid yet (nbf)"},
		{name: "nbf within the leeway", key: rsaKey, payload: claimsJSON(now, fmt.Sprintf(`,"nbf":%d`, now.Add(50*time.Second).Unix())), roles: []string{"manager"}},
		{name: "iat in the future", key: rsaKey, payload: []byte(fmt.Sprintf(`{"iss":%q,"aud":%q,"sub":"a","iat":%d,"exp":%d}`, testIssuer, testResource, now.Add(2*time.Minute).Unix(), now.Add(time.Hour).Unix())), reason: "token issued in the future (iat)"},
		{name: "another issuer", key: rsaKey, payload: []byte(fmt.Sprintf(`{"iss":"https://evil.example","aud":%q,"sub":"a","exp":%d}`, testResource, now.Add(time.Hour).Unix())), reason: "iss is not the issuer"},
		{name: "not an object", key: rsaKey, payload: []byte(`["a"]`), reason: "claims are not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			caller, err := v.Verify(t.Context(), tt.key.sign(t, tt.payload))
			if tt.reason != "" {
				var ite *identity.InvalidTokenError
				if !errors.As(err, &ite) || ite.Reason != tt.reason {
					t.Fatalf("Verify: %v, want reason %q", err, tt.reason)
				}
				return
			}
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if !reflect.DeepEqual(caller.Roles, tt.roles) {
				t.Errorf("roles = %q, want %q", caller.Roles, tt.roles)
			}
			if tt.check != nil {
				tt.check(t, caller.Claims)
			}
		})
	}
}

// TestJWKSFileRotation: a JWKS file is re-read when it changes; a key
// removed from it stops verifying, also for tokens already cached.
func TestJWKSFileRotation(t *testing.T) {
	t.Parallel()
	a, b := newRSAKey(t, "a"), newRSAKey(t, "b")
	path := newJWKSFile(t, a)
	c := newClock()
	v := fileVerifier(t, path, c, nil)
	tokA, tokB := a.sign(t, claimsJSON(c.Now(), "")), b.sign(t, claimsJSON(c.Now(), ""))
	if _, err := v.Verify(t.Context(), tokA); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(t.Context(), tokB); !errors.Is(err, identity.ErrInvalidToken) {
		t.Fatalf("b before it is in the file: %v", err)
	}
	writeJWKS(t, path, b) // a withdrawn, b added
	c.Advance(2 * time.Second)
	if _, err := v.Verify(t.Context(), tokB); err != nil {
		t.Fatalf("b after the file changed: %v", err)
	}
	if _, err := v.Verify(t.Context(), tokA); !errors.Is(err, identity.ErrInvalidToken) {
		t.Fatalf("a after it left the file (it was cached): %v", err)
	}
}

// TestJWKSKeysNotUsed: symmetric keys, small RSA keys and encryption keys
// in a key set are never used, so an HMAC token "signed" with such a key
// is refused.
func TestJWKSKeysNotUsed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	secret := []byte("0123456789abcdef0123456789abcdef")
	oct, _ := jwk.Import(secret)
	_ = oct.Set(jwk.KeyIDKey, "oct")
	small, _ := rsa.GenerateKey(rand.Reader, 1024)
	smallPub, _ := jwk.Import(small.Public())
	_ = smallPub.Set(jwk.KeyIDKey, "small")
	good := newRSAKey(t, "good")
	goodPub, _ := jwk.Import(good.priv.Public())
	_ = goodPub.Set(jwk.KeyIDKey, "good")
	set := jwk.NewSet()
	_ = set.AddKey(oct)
	_ = set.AddKey(smallPub)
	_ = set.AddKey(goodPub)
	b, _ := json.Marshal(set)
	path := filepath.Join(dir, "jwks.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	c := newClock()
	v := fileVerifier(t, path, c, nil)
	payload := claimsJSON(c.Now(), "")
	for name, tok := range map[string]string{
		"HS256 with the set's oct key": sign(t, payload, jwa.HS256(), secret, "oct"),
		"RS256 with a 1024-bit key":    sign(t, payload, jwa.RS256(), small, "small"),
	} {
		if _, err := v.Verify(t.Context(), tok); !errors.Is(err, identity.ErrInvalidToken) {
			t.Errorf("%s: %v, want an invalid token", name, err)
		}
	}
	if _, err := v.Verify(t.Context(), good.sign(t, payload)); err != nil {
		t.Errorf("the good key: %v", err)
	}
}

// TestCacheNeverPastExp: a cached token is served from the cache until
// its exp, never after (the leeway applies to a fresh check only).
func TestCacheNeverPastExp(t *testing.T) {
	t.Parallel()
	k := newRSAKey(t, "k")
	path := newJWKSFile(t, k)
	c := newClock()
	v := fileVerifier(t, path, c, nil)
	tok := k.sign(t, claimsJSON(c.Now(), ""))
	first, err := v.Verify(t.Context(), tok)
	if err != nil {
		t.Fatal(err)
	}
	second, err := v.Verify(t.Context(), tok)
	if err != nil || second != first {
		t.Fatalf("not answered from the cache: %p %p %v", first, second, err)
	}
	c.Advance(2 * time.Hour)
	if _, err := v.Verify(t.Context(), tok); !errors.Is(err, identity.ErrInvalidToken) {
		t.Fatalf("past exp: %v", err)
	}
}

// TestJWKSFileKeyReplacedUnderItsKid: a key replaced in the JWKS file under
// the same kid is not seen before the file is looked at again — a token of
// the new key is refused while the old one is in use, which no request can
// hurry — and is seen from the moment the check interval has passed.
func TestJWKSFileKeyReplacedUnderItsKid(t *testing.T) {
	t.Parallel()
	old, renewed := newRSAKey(t, "a"), newRSAKey(t, "a")
	path := newJWKSFile(t, old)
	c := newClock()
	v := fileVerifier(t, path, c, nil)
	if _, err := v.Verify(t.Context(), old.sign(t, claimsJSON(c.Now(), ""))); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	writeJWKS(t, path, renewed)
	// A later write: the file's stamp is its modification time and size,
	// and two writes within one tick of the file system's clock, of equal
	// size, look alike.
	if err := os.Chtimes(path, st.ModTime().Add(time.Second), st.ModTime().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	tok := renewed.sign(t, claimsJSON(c.Now(), ""))
	if _, err := v.Verify(t.Context(), tok); !errors.Is(err, identity.ErrInvalidToken) {
		t.Fatalf("the renewed key within the check interval: %v, want the old key still in use", err)
	}
	c.Advance(identity.FileCheckInterval)
	if _, err := v.Verify(t.Context(), renewed.sign(t, claimsJSON(c.Now(), `,"n":1`))); err != nil {
		t.Fatalf("the renewed key once the check interval has passed: %v", err)
	}
}
