package console_test

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/identity"
	"github.com/toolgate/toolgate/internal/config"
)

// authServer is a minimal OAuth 2.1 authorization server for one public
// client: it approves every authorization request at once (no login
// page), and issues an RS256 access token only to a token request whose
// code_verifier matches the code's S256 challenge.
type authServer struct {
	*httptest.Server
	t        *testing.T
	key      *rsa.PrivateKey
	resource string

	mu         sync.Mutex
	challenges map[string]string // code → code_challenge
	redirects  map[string]string // code → redirect_uri
	verified   int
}

func newAuthServer(t *testing.T, resource string) *authServer {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	a := &authServer{t: t, key: key, resource: resource, challenges: map[string]string{}, redirects: map[string]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", a.metadata)
	mux.HandleFunc("GET /jwks", a.jwks)
	mux.HandleFunc("GET /authorize", a.authorize)
	mux.HandleFunc("POST /token", a.token)
	a.Server = httptest.NewServer(mux)
	t.Cleanup(a.Close)
	return a
}

var b64 = base64.RawURLEncoding

func (a *authServer) json(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Access-Control-Allow-Origin", "*")
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func (a *authServer) metadata(w http.ResponseWriter, _ *http.Request) {
	a.json(w, 200, map[string]any{"issuer": a.URL, "authorization_endpoint": a.URL + "/authorize", "token_endpoint": a.URL + "/token",
		"jwks_uri": a.URL + "/jwks", "code_challenge_methods_supported": []string{"S256"}, "response_types_supported": []string{"code"}})
}

func (a *authServer) jwks(w http.ResponseWriter, _ *http.Request) {
	a.json(w, 200, map[string]any{"keys": []any{map[string]string{"kty": "RSA", "kid": "k1", "alg": "RS256", "use": "sig",
		"n": b64.EncodeToString(a.key.N.Bytes()), "e": b64.EncodeToString(big.NewInt(int64(a.key.E)).Bytes())}}})
}

func (a *authServer) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("response_type") != "code" || q.Get("client_id") != "toolgate-console" || q.Get("code_challenge_method") != "S256" ||
		q.Get("code_challenge") == "" || q.Get("state") == "" || !strings.HasSuffix(q.Get("redirect_uri"), "/console/") {
		a.t.Errorf("authorization request: %v", q)
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	code := b64.EncodeToString([]byte(time.Now().String()))
	a.mu.Lock()
	a.challenges[code], a.redirects[code] = q.Get("code_challenge"), q.Get("redirect_uri")
	a.mu.Unlock()
	back, _ := url.Parse(q.Get("redirect_uri"))
	back.RawQuery = url.Values{"code": {code}, "state": {q.Get("state")}}.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

func (a *authServer) token(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f, _ := url.ParseQuery(string(body))
	a.mu.Lock()
	challenge, redirect := a.challenges[f.Get("code")], a.redirects[f.Get("code")]
	delete(a.challenges, f.Get("code"))
	a.mu.Unlock()
	sum := sha256.Sum256([]byte(f.Get("code_verifier")))
	if f.Get("grant_type") != "authorization_code" || challenge == "" || b64.EncodeToString(sum[:]) != challenge ||
		f.Get("client_id") != "toolgate-console" || f.Get("redirect_uri") != redirect || r.Header.Get("Authorization") != "" {
		a.json(w, 400, map[string]string{"error": "invalid_grant"})
		return
	}
	a.mu.Lock()
	a.verified++
	a.mu.Unlock()
	a.json(w, 200, map[string]any{"access_token": a.jwt("olga", "admin"), "token_type": "Bearer", "expires_in": 600})
}

func (a *authServer) jwt(sub string, roles ...string) string {
	head, _ := json.Marshal(map[string]string{"alg": "RS256", "kid": "k1", "typ": "at+jwt"})
	now := time.Now().Unix()
	claims, _ := json.Marshal(map[string]any{"iss": a.URL, "aud": a.resource, "sub": sub, "roles": roles, "iat": now, "exp": now + 600,
		"client_id": "toolgate-console"})
	signing := b64.EncodeToString(head) + "." + b64.EncodeToString(claims)
	h := sha256.Sum256([]byte(signing))
	sig, err := rsa.SignPKCS1v15(rand.Reader, a.key, crypto.SHA256, h[:])
	require.NoError(a.t, err)
	return signing + "." + b64.EncodeToString(sig)
}

// TestBrowserConsoleOAuth signs in through the issuer: authorization code
// with PKCE (S256) as a public client; the access token the page gets is
// a JWT toolgate verifies like any caller's.
func TestBrowserConsoleOAuth(t *testing.T) {
	d := startDriver(t)
	const resource = "http://toolgate.test/mcp"
	as := newAuthServer(t, resource)
	base := serveWith(t, func(s *config.Serve) {
		s.Auth = identity.Settings{Issuer: as.URL, Resource: resource}
	})
	d.do("goto", map[string]any{"url": base + "/console/", "view": "signin"})
	d.do("waitText", map[string]any{"selector": "#oauth-issuer", "text": as.URL})
	d.do("click", map[string]any{"selector": "#oauth-start"})
	d.do("waitSelector", map[string]any{"selector": `body[data-ready="matrix"]`})
	d.do("waitText", map[string]any{"selector": "#who-name", "text": "olga (operator)"})
	tok, _ := d.do("session", map[string]any{"key": "toolgate.console.token"})["value"].(string)
	assert.Len(t, strings.Split(tok, "."), 3, "a JWT access token")
	assert.NotContains(t, d.do("url", nil)["url"], "code=", "the code is taken out of the address")
	assert.EqualValues(t, 0, d.do("cookies", nil)["n"])
	as.mu.Lock()
	assert.Equal(t, 1, as.verified, "one token request, with the verifier of the challenge")
	as.mu.Unlock()
	assert.Empty(t, d.do("errors", nil)["errors"], "errors in the page")
}
