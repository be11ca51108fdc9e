package httpserve_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/identity"
	"github.com/toolgate/toolgate/internal/server/httpserve"
	"github.com/toolgate/toolgate/internal/testkit/oidctest"
	"github.com/toolgate/toolgate/mcpadapter"
)

const (
	testIssuer   = "https://login.example.com/realms/acme"
	testResource = "http://127.0.0.1/mcp"
	testMetaURL  = "http://127.0.0.1/.well-known/oauth-protected-resource/mcp"
)

// issuer signs JWT access tokens with a key it publishes as a JWKS file.
type issuer struct{ *oidctest.JWKSKey }

func newIssuer(t *testing.T) *issuer {
	t.Helper()
	return &issuer{oidctest.NewJWKSKey(t)}
}

// token signs an access token for subject with roles, for aud.
func (i *issuer) token(t *testing.T, subject, aud string, roles ...string) string {
	t.Helper()
	return i.tokenUntil(t, time.Now().Add(time.Hour), subject, aud, roles...)
}

// tokenUntil is token with its exp at exp.
func (i *issuer) tokenUntil(t *testing.T, exp time.Time, subject, aud string, roles ...string) string {
	t.Helper()
	r, _ := json.Marshal(roles)
	now := time.Now().Unix()
	return i.Sign(t, fmt.Sprintf(`{"iss":%q,"sub":%q,"aud":%q,"exp":%d,"iat":%d,"roles":%s}`, testIssuer, subject, aud, exp.Unix(), now, r))
}

func newJWT(t *testing.T, s identity.Settings) *identity.JWT {
	t.Helper()
	v, err := identity.NewJWT(t.Context(), s, identity.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	return v
}

// TestJWTAnswers: the HTTP answers of docs/contract.md §12 with JWT callers beside the
// tokens file, and the tokens file's own answer unchanged without them.
func TestJWTAnswers(t *testing.T) {
	t.Parallel()
	iss := newIssuer(t)
	v := newJWT(t, identity.Settings{Issuer: testIssuer, JWKS: iss.Path, Resource: testResource})
	withJWT := startServer(t, httpserve.Options{MCPServer: newFixture(t).build, Tokens: testTokens(t), JWT: v})
	anonymous := startServer(t, httpserve.Options{MCPServer: newFixture(t).build, JWT: v, AllowAnonymous: true})
	tokensOnly := startServer(t, httpserve.Options{MCPServer: newFixture(t).build, Tokens: testTokens(t)})

	for _, tc := range []struct {
		name      string
		url       string
		token     string
		status    int
		challenge string
	}{
		{"no token", withJWT.URL, "", http.StatusUnauthorized, `Bearer resource_metadata="` + testMetaURL + `"`},
		{"a JWT", withJWT.URL, iss.token(t, "dana", testResource, "admin"), http.StatusOK, ""},
		{"the tokens file", withJWT.URL, aliceToken, http.StatusOK, ""},
		{"a JWT for another audience", withJWT.URL, iss.token(t, "dana", "https://other.example/mcp"), http.StatusUnauthorized,
			`Bearer error="invalid_token", resource_metadata="` + testMetaURL + `"`},
		{"neither", withJWT.URL, "no-such-token", http.StatusUnauthorized, `Bearer error="invalid_token", resource_metadata="` + testMetaURL + `"`},
		{"no token, --allow-anonymous", anonymous.URL, "", http.StatusOK, ""},
		{"a bad token, --allow-anonymous", anonymous.URL, "no-such-token", http.StatusUnauthorized,
			`Bearer error="invalid_token", resource_metadata="` + testMetaURL + `"`},
		{"tokens file alone: no token", tokensOnly.URL, "", http.StatusOK, ""},
		{"tokens file alone: unknown token", tokensOnly.URL, "no-such-token", http.StatusUnauthorized, `Bearer error="invalid_token"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := map[string]string{}
			if tc.token != "" {
				h["Authorization"] = "Bearer " + tc.token
			}
			resp := postBody(t, tc.url+"/mcp", []byte(initialize), h)
			assert.Equal(t, tc.status, resp.StatusCode)
			assert.Equal(t, tc.challenge, resp.Header.Get("WWW-Authenticate"))
		})
	}

	t.Run("the caller is the token's", func(t *testing.T) {
		cs := connect(t, withJWT.URL+"/mcp", newBearer(iss.token(t, "dana", testResource, "admin")))
		assert.Equal(t, []string{"echo", "report", "slow"}, toolNames(t, cs))
		cs = connect(t, withJWT.URL+"/mcp", newBearer(iss.token(t, "erin", testResource)))
		assert.Equal(t, []string{"echo", "slow"}, toolNames(t, cs))
	})
}

// TestJWTMetadata: the Protected Resource Metadata is served without a
// token at both paths, behind the Host check; not without JWT.
func TestJWTMetadata(t *testing.T) {
	t.Parallel()
	v := newJWT(t, identity.Settings{Issuer: testIssuer, JWKS: newIssuer(t).Path, Resource: testResource, ScopesSupported: []string{"tools:call"}})
	srv := httpserve.New(httpserve.Options{MCPServer: newFixture(t).build, JWT: v})
	_, addr, _ := listen(t, srv)
	for _, p := range []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"} {
		resp, err := http.Get("http://" + addr + p)
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&m))
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode, p)
		assert.Equal(t, map[string]any{"resource": testResource, "authorization_servers": []any{testIssuer},
			"bearer_methods_supported": []any{"header"}, "scopes_supported": []any{"tools:call"}, "resource_name": "toolgate"}, m, p)
	}
	head := "GET /.well-known/oauth-protected-resource/mcp HTTP/1.1\r\nHost: evil.example\r\n\r\n"
	assert.Equal(t, "HTTP/1.1 403 Forbidden", rawRequest(t, addr, head, nil), "the DNS-rebinding check applies")

	plain := startServer(t, httpserve.Options{MCPServer: newFixture(t).build, Tokens: testTokens(t)})
	resp, err := http.Get(plain.URL + "/.well-known/oauth-protected-resource/mcp")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "no metadata without an issuer")
}

// TestJWTIssuerUnreachable: while the key set has never been fetched, a
// JWT gets 503 with Retry-After (it was not judged); the tokens file and
// the 401 for no token are unaffected.
func TestJWTIssuerUnreachable(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := "http://" + l.Addr().String() + "/jwks"
	require.NoError(t, l.Close())
	v := newJWT(t, identity.Settings{Issuer: testIssuer, JWKS: closed, Resource: testResource})
	ts := startServer(t, httpserve.Options{MCPServer: newFixture(t).build, Tokens: testTokens(t), JWT: v})
	resp := postBody(t, ts.URL+"/mcp", []byte(initialize), map[string]string{"Authorization": "Bearer " + newIssuer(t).token(t, "dana", testResource)})
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, strconv.Itoa(identity.RetryAfterSeconds), resp.Header.Get("Retry-After"))
	assert.Empty(t, resp.Header.Get("WWW-Authenticate"))
	assert.Equal(t, http.StatusOK, postBody(t, ts.URL+"/mcp", []byte(initialize), map[string]string{"Authorization": "Bearer " + aliceToken}).StatusCode)
	assert.Equal(t, http.StatusUnauthorized, postBody(t, ts.URL+"/mcp", []byte(initialize), nil).StatusCode)
}

// TestJWTBeforeBody: the token is judged from the headers, before the
// body is read: a refused request gets 401, not 413, for a body announced
// over 4 MiB that never comes. (A small unread body is drained by net/http
// before it writes the answer, within the read deadline: not ours.)
func TestJWTBeforeBody(t *testing.T) {
	t.Parallel()
	v := newJWT(t, identity.Settings{Issuer: testIssuer, JWKS: newIssuer(t).Path, Resource: testResource})
	srv := httpserve.New(httpserve.Options{MCPServer: newFixture(t).build, JWT: v})
	_, addr, _ := listen(t, srv)
	assert.Equal(t, "HTTP/1.1 401 Unauthorized", rawRequest(t, addr, mcpPost(addr, mcpadapter.MaxBodyBytes+1, "Authorization: Bearer a.b.c\r\n"), nil))
	assert.Equal(t, "HTTP/1.1 401 Unauthorized", rawRequest(t, addr, mcpPost(addr, mcpadapter.MaxBodyBytes+1, ""), nil), "no token")
}

// TestJWTOperator: a JWT caller with the operator role reads the verbose
// health; without the role 403; without a token 401 naming the metadata.
func TestJWTOperator(t *testing.T) {
	t.Parallel()
	iss := newIssuer(t)
	v := newJWT(t, identity.Settings{Issuer: testIssuer, JWKS: iss.Path, Resource: testResource})
	ts := startServer(t, httpserve.Options{MCPServer: newFixture(t).build, JWT: v})
	get := func(token string) *http.Response {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, ts.URL+"/healthz?verbose=1", nil)
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	assert.Equal(t, http.StatusOK, get(iss.token(t, "dana", testResource, "admin")).StatusCode)
	assert.Equal(t, http.StatusForbidden, get(iss.token(t, "erin", testResource, "reader")).StatusCode)
	resp := get("")
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.Equal(t, `Bearer resource_metadata="`+testMetaURL+`"`, resp.Header.Get("WWW-Authenticate"))
	assert.Equal(t, http.StatusUnauthorized, get("no-such-token").StatusCode)
}
