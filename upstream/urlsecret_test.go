package upstream

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/testkit/testserver"
)

// TestURLSecretsReachOnlyTheUpstream: an upstream url's ${VAR} and
// ${file:PATH} are resolved when the pool is made; every request carries
// the resolved query, and user information as Basic credentials, exactly
// as written; and an error of a request to it names the URL without its
// query and user information.
func TestURLSecretsReachOnlyTheUpstream(t *testing.T) {
	t.Parallel()
	const envSecret, fileSecret, password = "env-S3CRET", "file-S3CRET", "pw-S3CRET"
	file := filepath.Join(t.TempDir(), "key")
	require.NoError(t, os.WriteFile(file, []byte(fileSecret+"\n"), 0o600))
	var (
		mu   sync.Mutex
		seen []string // each request's query and Basic credentials
	)
	srv := testserver.New(testserver.Options{})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pw, _ := r.BasicAuth()
		mu.Lock()
		seen = append(seen, r.URL.RawQuery+" "+user+":"+pw)
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	lookup := lookupOf(map[string]string{"TG_URL_KEY": envSecret, "TG_URL_PW": password})
	u := strings.Replace(ts.URL, "http://", "http://svc:${TG_URL_PW}@", 1) + "/mcp?key=${TG_URL_KEY}&file=${file:" + file + "}"
	p, err := NewPool([]Config{{Name: "up", URL: u, Timeout: 5 * time.Second}}, &Options{LookupEnv: lookup})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	res, err := call(t.Context(), t, p, "upstream:up/hello", map[string]any{"name": "ann"})
	require.NoError(t, err)
	require.Equal(t, "hello, ann", textOf(t, res))
	mu.Lock()
	require.NotEmpty(t, seen)
	for _, s := range seen {
		require.Equal(t, "key="+envSecret+"&file="+fileSecret+" svc:"+password, s, "each request carries the url as resolved")
	}
	mu.Unlock()

	// The same upstream, down: the error names where, not the secrets.
	require.NoError(t, p.Close())
	ts.Close()
	down, err := NewPool([]Config{{Name: "up", URL: u, Timeout: 5 * time.Second}}, &Options{LookupEnv: lookup})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, down.Close()) })
	_, err = call(t.Context(), t, down, "upstream:up/hello", map[string]any{"name": "ann"})
	require.Error(t, err)
	require.Contains(t, err.Error(), strings.TrimPrefix(ts.URL, "http://")+"/mcp?REDACTED")
	for _, s := range []string{envSecret, fileSecret, password, "svc"} {
		require.NotContains(t, err.Error(), s)
	}
}

// TestURLReferenceRefused: a url whose reference does not resolve, or
// which is no http(s) URL once resolved, is refused by NewPool, naming
// the variable or the setting and no value.
func TestURLReferenceRefused(t *testing.T) {
	t.Parallel()
	lookup := lookupOf(map[string]string{"TG_NOT_A_URL": "ftp://S3CRET@host/x?S3CRET"})
	for u, want := range map[string]string{
		"https://host/mcp?key=${TG_MISSING}": "upstream up: url: upstream: cannot resolve a secret: environment variable TG_MISSING is not set",
		"${TG_NOT_A_URL}":                    "upstream: invalid configuration: upstream up: url ftp://REDACTED@host/x?REDACTED is not an http(s) URL with a host",
	} {
		_, err := NewPool([]Config{{Name: "up", URL: u}}, &Options{LookupEnv: lookup})
		require.EqualError(t, err, want)
	}
}

// TestSettingsURLQuoted: a url holding a reference is a url (checked once
// resolved), and a --upstream value refused as malformed is quoted with
// its URL redacted.
func TestSettingsURLQuoted(t *testing.T) {
	t.Parallel()
	require.Empty(t, Settings{Name: "up", URL: "${UPSTREAM_URL}"}.Problems())
	require.Empty(t, Settings{Name: "up", URL: "https://${HOST}/mcp?key=${KEY}"}.Problems())
	require.Equal(t, []string{"url must be http:// or https://"}, Settings{Name: "up", URL: "ftp://host/x"}.Problems())
	for _, v := range []string{"https://svc:S3CRET@host/mcp", "=https://host/mcp?S3CRET", " =https://S3CRET@host/mcp"} {
		_, err := ParseSettings(v)
		require.Error(t, err, v)
		require.NotContains(t, err.Error(), "S3CRET")
		require.Contains(t, err.Error(), "host/mcp")
	}
}
