package console_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/identity"
	"github.com/toolgate/toolgate/internal/server/console"
)

// TestServedByTheGateway: /console is on the MCP listener, behind its
// Host/Origin guard and its identity chain.
func TestServedByTheGateway(t *testing.T) {
	t.Parallel()
	base := serve(t, "", "", map[string]identity.TokenEntry{
		"tok-olga": {Subject: "olga", Roles: []string{"admin"}},
		"tok-carl": {Subject: "carl", Roles: []string{"contractor"}},
	})
	get := func(path, token string, header ...string) *http.Response {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), "GET", base+path, nil)
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		if h := req.Header.Get("Host"); h != "" {
			req.Host = h
		}
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		t.Cleanup(func() { _ = res.Body.Close() })
		return res
	}
	res := get("/console/", "")
	assert.Equal(t, http.StatusOK, res.StatusCode)
	assert.Contains(t, res.Header.Get("Content-Security-Policy"), "script-src 'self'")
	assert.Equal(t, http.StatusUnauthorized, get("/console/api/me", "").StatusCode)
	res = get("/console/api/me", "not-a-token")
	assert.Equal(t, http.StatusUnauthorized, res.StatusCode, "a token the chain refuses")
	assert.Contains(t, res.Header.Get("WWW-Authenticate"), "Bearer")
	assert.Equal(t, http.StatusForbidden, get("/console/", "", "Host", "evil.example").StatusCode, "DNS rebinding")
	assert.Equal(t, http.StatusForbidden, get("/console/api/me", "tok-olga", "Origin", "https://evil.example").StatusCode)
	assert.Equal(t, http.StatusForbidden, get("/console/api/status", "tok-carl").StatusCode)

	res = get("/console/api/status", "tok-olga")
	require.Equal(t, http.StatusOK, res.StatusCode)
	var st console.Status
	require.NoError(t, json.NewDecoder(res.Body).Decode(&st))
	assert.Equal(t, "bundled example", st.Source)
	assert.Equal(t, "per_caller", st.Evaluation)
	assert.NotEmpty(t, st.EvaluationWhy)
	assert.Positive(t, st.Tools)
}
