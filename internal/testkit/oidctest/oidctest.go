// Package oidctest runs the real OpenID provider of the tests
// (testdata/oidc/provider.mjs: oidc-provider, pinned in its
// package-lock.json, installed by scripts/oidc-setup) on loopback, and
// gets access tokens from it. Tests only.
//
// Start skips under -short and when node or the npm packages are missing,
// except under CI (the CI environment variable set), where that is a
// failure: the end-to-end tests of docs/contract.md §12 never skip in .ci/run.
package oidctest

import (
	"bufio"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/testkit/proctest"
)

// Dir is testdata/oidc of the module.
var Dir = func() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "testdata", "oidc")
}()

// Provider is a running provider.mjs.
type Provider struct {
	// Issuer is the trusted issuer, http://127.0.0.1:PORT.
	Issuer string `json:"issuer"`
	// Other is an issuer sharing Issuer's keys that tests do not trust.
	Other string `json:"other"`
	// Resource gets RS256 tokens, ResourceES ES256 ones; OtherResource is
	// some other server's.
	Resource      string `json:"resource"`
	ResourceES    string `json:"resource_es"`
	OtherResource string `json:"other_resource"`
	// UpstreamResource is the resource of an upstream behind toolgate
	// (docs/contract.md §17): client gateway-app gets its tokens by client
	// credentials or token exchange.
	UpstreamResource string `json:"upstream_resource"`
}

// StartOptions are further settings of StartWith.
type StartOptions struct {
	// Resource: see Start.
	Resource string
	// UpstreamTTL is the lifetime of the upstream's tokens (0: the
	// provider's default, 60 s).
	UpstreamTTL time.Duration
	// GatewaySecret is the client secret of gateway-app ("":
	// gateway-secret): a test that looks for secrets in outputs sets a
	// distinctive one.
	GatewaySecret string
}

// Require skips (or, under CI, fails) when the provider cannot run, and
// returns node's path.
func Require(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs a real OpenID provider (node testdata/oidc/provider.mjs); skipped with -short")
	}
	return RequireNode(t, Dir, "oidc-provider not installed: run npm ci in testdata/oidc (scripts/oidc-setup)")
}

// RequireNode skips (or, under CI, fails) unless dir holds node_modules
// (missing says how to install them) and node is on PATH, and returns
// node's path.
func RequireNode(t testing.TB, dir, missing string) string {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, "node_modules")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(missing + "; CI is set, so this is a failure")
		}
		t.Skip(missing)
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

// Start runs the provider, its trusted issuer on port (0: any), issuing
// RS256 tokens for resource ("" keeps the provider's default,
// http://127.0.0.1/mcp). It stops when the test ends. A start that prints
// nothing within StartWait is killed and tried again (a rare node start-up
// stall seen in CI); three such stalls fail the test.
func Start(t testing.TB, port int, resource string) *Provider {
	t.Helper()
	return StartWith(t, port, StartOptions{Resource: resource})
}

// StartWith is Start with further options.
func StartWith(t testing.TB, port int, o StartOptions) *Provider {
	t.Helper()
	node := Require(t)
	// It ends when its stdin closes, so with the test process.
	args := []string{"provider.mjs", "--port", strconv.Itoa(port), "--exit-with-stdin"}
	if o.Resource != "" {
		args = append(args, "--resource", o.Resource)
	}
	if o.UpstreamTTL > 0 {
		args = append(args, "--upstream-ttl", strconv.Itoa(int(o.UpstreamTTL.Seconds())))
	}
	if o.GatewaySecret != "" {
		args = append(args, "--gateway-secret", o.GatewaySecret)
	}
	var stalls []string
	for range 3 {
		p, stderr, ok := startOnce(t, node, args)
		if ok {
			return p
		}
		stalls = append(stalls, stderr)
		t.Logf("provider.mjs printed nothing within %s; starting it again. Its stderr:\n%s", StartWait, stderr)
	}
	t.Fatalf("provider.mjs did not listen in 3 tries:\n%s", strings.Join(stalls, "\n---\n"))
	return nil
}

// StartWait bounds one start of the provider (it starts in well under a
// second; the bound is for a stalled start only).
const StartWait = 45 * time.Second

func startOnce(t testing.TB, node string, args []string) (*Provider, string, bool) {
	t.Helper()
	cmd := exec.Command(node, args...)
	cmd.Dir = Dir
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &proctest.Buffer{}
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
		var p Provider
		if err := json.Unmarshal([]byte(l), &p); err != nil {
			t.Fatalf("provider.mjs printed %q: %v", l, err)
		}
		return &p, "", true
	case <-time.After(StartWait):
		_ = cmd.Process.Kill()
		<-done
		return nil, stderr.String(), false
	}
}

// Token gets an access token for resource from the trusted issuer with the
// client_credentials grant, as client: alice (roles [manager, reader]),
// bob (roles "reader") or nobody (no roles claim).
func (p *Provider) Token(t testing.TB, client, resource string) string {
	t.Helper()
	return TokenFrom(t, p.Issuer, client, resource)
}

// TokenFrom is Token from any issuer of the provider (p.Other, say).
func TokenFrom(t testing.TB, issuer, client, resource string) string {
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

// Rotate makes the trusted issuer sign with a new key (kid rsa-2); the old
// one stays published.
func (p *Provider) Rotate(t testing.TB) {
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

// FreePort returns a loopback port nothing listens on (now).
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Clock is a test clock (identity.WithClock): the real time plus what
// Advance added. It follows the real time so that tokens the provider
// issues late in a slow test run are not "issued in the future".
type Clock struct {
	mu     sync.Mutex
	offset time.Duration
}

// NewClock returns a Clock at the real time.
func NewClock() *Clock { return &Clock{} }

// Now returns the real time plus the advances.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}
