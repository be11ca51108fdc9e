package oidctest

import (
	"crypto"
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

// JWKSKey is a signing key whose public half is published, with key id
// "k1", in a JWKS file: an issuer of JWTs for tests that need no provider
// running.
type JWKSKey struct {
	// Path is the JWKS file (in a temporary directory of the test).
	Path string
	alg  jwa.SignatureAlgorithm
	key  crypto.Signer
}

// NewJWKSKey generates an ES256 key and publishes it.
func NewJWKSKey(t testing.TB) *JWKSKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	return PublishJWKS(t, jwa.ES256(), key)
}

// PublishJWKS writes the JWKS file of key's public half, for alg.
func PublishJWKS(t testing.TB, alg jwa.SignatureAlgorithm, key crypto.Signer) *JWKSKey {
	t.Helper()
	pub, err := jwk.Import(key.Public())
	require.NoError(t, err)
	require.NoError(t, pub.Set(jwk.KeyIDKey, "k1"))
	require.NoError(t, pub.Set(jwk.AlgorithmKey, alg))
	set := jwk.NewSet()
	require.NoError(t, set.AddKey(pub))
	data, err := json.Marshal(set)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "jwks.json")
	require.NoError(t, os.WriteFile(path, data, 0o600))
	return &JWKSKey{Path: path, alg: alg, key: key}
}

// Sign signs payload (the JWT's claims, a JSON object, taken as given)
// and returns the compact JWT, its key id in the protected header.
func (k *JWKSKey) Sign(t testing.TB, payload string) string {
	t.Helper()
	return SignJWS(t, []byte(payload), k.alg, k.key, "k1")
}

// SignJWS signs payload with alg and key (any key jws.WithKey takes,
// whether or not a JWKS publishes it) and returns the compact JWS, kid in
// its protected header.
func SignJWS(t testing.TB, payload []byte, alg jwa.SignatureAlgorithm, key any, kid string) string {
	t.Helper()
	h := jws.NewHeaders()
	require.NoError(t, h.Set(jws.KeyIDKey, kid))
	b, err := jws.Sign(payload, jws.WithKey(alg, key, jws.WithProtectedHeaders(h)))
	require.NoError(t, err)
	return string(b)
}
