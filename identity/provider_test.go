package identity_test

import (
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/oidctest"

	"github.com/toolgate/toolgate/engine"
)

// provider is the real OpenID provider of testdata/oidc, started by
// internal/oidctest (which skips under -short, and fails under CI when
// node or its npm packages are missing).
type provider struct{ *oidctest.Provider }

// startProvider runs the provider, its trusted issuer on port (0: any),
// until the test ends.
func startProvider(t *testing.T, port int) *provider {
	t.Helper()
	return &provider{oidctest.Start(t, port, "")}
}

// token gets an access token for resource with the client_credentials grant
// from issuer, as client (alice, bob or nobody).
func token(t *testing.T, issuer, client, resource string) string {
	t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}, "resource": {resource}, "scope": {"tools:read tools:call"}}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, issuer+"/token", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(client+"-app", client+"-secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		AccessToken string `json:"access_token"`
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || body.AccessToken == "" {
		t.Fatalf("token endpoint: %s: %s %s", resp.Status, body.Error, body.Description)
	}
	return body.AccessToken
}

// rotate makes the trusted issuer sign with a new key (kid rsa-2).
func (p *provider) rotate(t *testing.T) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, p.Issuer+"/__rotate", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("rotate: %s", resp.Status)
	}
}

// freePort returns a loopback port nothing listens on (now).
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// clock is a test clock that moves only when told.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Now()} }

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

type lockedWriterMu = sync.Mutex

func itoa(i int) string { return strconv.Itoa(i) }

// fakeTokens is a tokens file: token -> subject.
type fakeTokens map[string]string

func (f fakeTokens) Lookup(token string) (*engine.Caller, bool) {
	s, ok := f[token]
	if !ok {
		return nil, false
	}
	return &engine.Caller{Subject: s}, true
}
