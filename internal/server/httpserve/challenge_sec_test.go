package httpserve_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/identity"
	"github.com/toolgate/toolgate/internal/server/httpserve"
)

// bareUnauthorized answers 401 with a bare Bearer challenge, as the
// approvals and console handlers answer nobody.
var bareUnauthorized = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("WWW-Authenticate", "Bearer")
	http.Error(w, "a bearer token is required", http.StatusUnauthorized)
})

// TestEvery401NamesTheMetadata: with JWT
// callers, every 401 names the Protected Resource Metadata, so a client
// learns where to get a token: the handlers mounted beside /mcp (approvals,
// console, routes) answering nobody, and the SDK's own refusal of a token
// that expired after it was verified. Without JWT there is no metadata to
// name and the bare challenge stays.
func TestEvery401NamesTheMetadata(t *testing.T) {
	t.Parallel()
	iss := newIssuer(t)
	want := `Bearer resource_metadata="` + testMetaURL + `"`

	// The verifier's clock is two hours behind: a token that expired an
	// hour ago verifies, and the SDK (on the real clock) refuses it.
	behind := func() time.Time { return time.Now().Add(-2 * time.Hour) }
	v, err := identity.NewJWT(t.Context(), identity.Settings{Issuer: testIssuer, JWKS: iss.Path, Resource: testResource},
		identity.WithLogger(slog.New(slog.DiscardHandler)), identity.WithClock(behind))
	require.NoError(t, err)
	withJWT := startServer(t, httpserve.Options{MCPServer: newFixture(t).build, Tokens: testTokens(t), JWT: v,
		Approvals: bareUnauthorized, Console: bareUnauthorized, Routes: map[string]http.Handler{"/extra": bareUnauthorized}})
	tokensOnly := startServer(t, httpserve.Options{MCPServer: newFixture(t).build, Tokens: testTokens(t),
		Approvals: bareUnauthorized, Console: bareUnauthorized, Routes: map[string]http.Handler{"/extra": bareUnauthorized}})

	get := func(url string) *http.Response {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		t.Cleanup(func() { _ = resp.Body.Close() })
		return resp
	}
	for _, path := range []string{"/approvals", "/approvals/x", "/console/api/me", "/extra"} {
		resp := get(withJWT.URL + path)
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, path)
		assert.Equal(t, want, resp.Header.Get("WWW-Authenticate"), path)
		resp = get(tokensOnly.URL + path)
		assert.Equal(t, "Bearer", resp.Header.Get("WWW-Authenticate"), "tokens file alone: "+path)
	}

	exp := time.Now().Add(-time.Hour)
	payload := fmt.Sprintf(`{"iss":%q,"sub":"dana","aud":%q,"exp":%d,"iat":%d,"roles":["admin"]}`,
		testIssuer, testResource, exp.Unix(), behind().Add(-time.Minute).Unix())
	tok := iss.Sign(t, payload)
	_, err = v.Verify(t.Context(), tok)
	require.NoError(t, err, "the verifier accepts it on its clock")
	resp := postBody(t, withJWT.URL+"/mcp", []byte(initialize), map[string]string{"Authorization": "Bearer " + tok})
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.Equal(t, want, resp.Header.Get("WWW-Authenticate"), "the SDK's refusal")
}
