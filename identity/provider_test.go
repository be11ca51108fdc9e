package identity_test

import (
	"bufio"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/engine"
)

// oidcDir holds the OpenID provider the tests run (testdata/oidc:
// package-lock.json pins oidc-provider; scripts/oidc-setup installs it).
var oidcDir = filepath.Join("..", "testdata", "oidc")

// provider is a running testdata/oidc/provider.mjs.
type provider struct {
	Issuer        string `json:"issuer"`
	Other         string `json:"other"` // an issuer sharing the keys, not trusted
	Resource      string `json:"resource"`
	ResourceES    string `json:"resource_es"`
	OtherResource string `json:"other_resource"`
}

// requireProvider skips under -short, and when node or the npm packages are
// missing, except under CI (the CI environment variable set), where that
// is a failure — as TestInteropTypeScript does.
func requireProvider(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs a real OpenID provider (node testdata/oidc/provider.mjs); skipped with -short")
	}
	if _, err := os.Stat(filepath.Join(oidcDir, "node_modules")); err != nil {
		const msg = "oidc-provider not installed: run npm ci in testdata/oidc (scripts/oidc-setup)"
		if os.Getenv("CI") != "" {
			t.Fatal(msg + "; CI is set, so this is a failure")
		}
		t.Skip(msg)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("node is not on PATH; CI is set, so this is a failure")
		}
		t.Skip("node is not on PATH")
	}
	return node
}

// startProvider runs the provider, its trusted issuer on port (0: any), and
// stops it when the test ends. A start that prints nothing within
// providerStartWait is killed and tried again (a rare node start-up stall
// seen in CI); three such stalls fail the test.
func startProvider(t *testing.T, port int) *provider {
	t.Helper()
	node := requireProvider(t)
	var stalls []string
	for range 3 {
		p, stderr, ok := startProviderOnce(t, node, port)
		if ok {
			return p
		}
		stalls = append(stalls, stderr)
		t.Logf("provider.mjs printed nothing within %s; starting it again. Its stderr:\n%s", providerStartWait, stderr)
	}
	t.Fatalf("provider.mjs did not listen in 3 tries:\n%s", strings.Join(stalls, "\n---\n"))
	return nil
}

// providerStartWait bounds one start of the provider (it starts in well
// under a second; the bound is for a stalled start only).
const providerStartWait = 45 * time.Second

// startProviderOnce starts the provider once; ok is false when it printed
// nothing within providerStartWait (it is then killed).
func startProviderOnce(t *testing.T, node string, port int) (*provider, string, bool) {
	t.Helper()
	cmd := exec.Command(node, "provider.mjs", "--port", strconv.Itoa(port))
	cmd.Dir = oidcDir
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &lockedWriter{w: &strings.Builder{}}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	stop := func() {
		stdin.Close() // the provider exits when its stdin closes
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			line <- sc.Text()
		}
		close(line)
	}()
	select {
	case l, ok := <-line:
		if !ok {
			stop()
			t.Fatalf("provider.mjs exited before listening:\n%s", stderr.String())
		}
		t.Cleanup(stop)
		var p provider
		if err := json.Unmarshal([]byte(l), &p); err != nil {
			t.Fatalf("provider.mjs printed %q: %v", l, err)
		}
		return &p, "", true
	case <-time.After(providerStartWait):
		_ = cmd.Process.Kill()
		<-done
		return nil, stderr.String(), false
	}
}

type lockedWriter struct {
	mu sync.Mutex
	w  *strings.Builder
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.String()
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
