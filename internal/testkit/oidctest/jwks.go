package oidctest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"
	"github.com/stretchr/testify/require"
)

// JWKSKey is an ES256 key whose public half is published, with key id
// "k1", in a JWKS file: an issuer of JWTs for tests that need no provider
// running.
type JWKSKey struct {
	// Path is the JWKS file (in a temporary directory of the test).
	Path string
	key  *ecdsa.PrivateKey
}

// NewJWKSKey generates a key and writes its JWKS file.
func NewJWKSKey(t testing.TB) *JWKSKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	pub, err := jwk.Import(key.Public())
	require.NoError(t, err)
	require.NoError(t, pub.Set(jwk.KeyIDKey, "k1"))
	require.NoError(t, pub.Set(jwk.AlgorithmKey, jwa.ES256()))
	set := jwk.NewSet()
	require.NoError(t, set.AddKey(pub))
	data, err := json.Marshal(set)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "jwks.json")
	require.NoError(t, os.WriteFile(path, data, 0o600))
	return &JWKSKey{Path: path, key: key}
}

// Sign signs payload (the JWT's claims, a JSON object, taken as given)
// with ES256 and the key id in the protected header, and returns the
// compact JWT.
func (k *JWKSKey) Sign(t testing.TB, payload string) string {
	t.Helper()
	h := jws.NewHeaders()
	require.NoError(t, h.Set(jws.KeyIDKey, "k1"))
	b, err := jws.Sign([]byte(payload), jws.WithKey(jwa.ES256(), k.key, jws.WithProtectedHeaders(h)))
	require.NoError(t, err)
	return string(b)
}
