package httpserve_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/identity"
	"github.com/toolgate/toolgate/internal/server/httpserve"
	"github.com/toolgate/toolgate/internal/testkit/mcptest"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/methods"
)

const testRegistry = `
sections:
  reports: { roles: [admin] }
tools:
  - name: echo
    method: demo.echo
    arguments: [{ name: text, type: string, required: true }]
  - name: report
    method: demo.echo
    section: reports
    arguments: [{ name: text, type: string }]
  - name: slow
    method: demo.slow
`

const (
	aliceToken = "alice-secret-token"
	carolToken = "carol-secret-token"
)

func testTokens(t *testing.T) *identity.Tokens {
	t.Helper()
	tok, err := identity.NewTokens(map[string]identity.TokenEntry{
		identity.HashToken(aliceToken): {Subject: "alice"},
		identity.HashToken(carolToken): {Subject: "carol", Roles: []string{"admin"}},
	})
	require.NoError(t, err)
	return tok
}

// fixture is an adapter-governed MCP server. slow blocks until release is
// closed, after signalling started; afters counts after-hook runs.
type fixture struct {
	adapter *mcpadapter.Adapter
	server  *mcp.Server // built by build
	started chan struct{}
	release chan struct{}
	afters  atomic.Int32
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "registry.yaml"), []byte(testRegistry), 0o600))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "rego"), 0o700))
	eng, err := engine.New(t.Context(), engine.Source{Registry: filepath.Join(dir, "registry.yaml"), Policies: filepath.Join(dir, "rego")}, engine.WithTimeout(10*time.Second))
	require.NoError(t, err)

	f := &fixture{started: make(chan struct{}, 1), release: make(chan struct{})}
	m := methods.Map{}
	m.Register("demo.echo", func(_ context.Context, a struct {
		Text string `json:"text"`
	}) (string, error) {
		return a.Text, nil
	})
	m.Register("demo.slow", func(ctx context.Context, _ struct{}) (string, error) {
		f.started <- struct{}{}
		select {
		case <-f.release:
			return "slept", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	})
	a := mcpadapter.New(mcpadapter.Options{Revisions: eng, Methods: m, Caller: httpserve.CallerFromRequest})
	a.AddHook(hooks.Hook{Name: "count", After: func(context.Context, *hooks.CallContext, *hooks.Record) error {
		f.afters.Add(1)
		return nil
	}})
	f.adapter = a
	return f
}

// build is the fixture's Options.MCPServer: the adapter's server with the
// HTTP transport's middleware outermost.
func (f *fixture) build(transport []mcpadapter.Layer) *mcp.Server {
	f.server, _ = f.adapter.NewServerWith(&mcp.Implementation{Name: "toolgate", Version: "test"}, nil, mcpadapter.Layers{Transport: transport})
	return f.server
}

// bearer adds an Authorization header when its token is set; the token
// may change between requests of one session.
type bearer struct {
	token atomic.Pointer[string]
	base  http.RoundTripper
}

func (b *bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if tok := b.token.Load(); tok != nil {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+*tok)
	}
	return b.base.RoundTrip(r)
}

func newBearer(token string) *bearer {
	b := &bearer{base: http.DefaultTransport}
	if token != "" {
		b.token.Store(&token)
	}
	return b
}

func connect(t *testing.T, endpoint string, b *bearer) *mcp.ClientSession {
	t.Helper()
	return connectProto(t, endpoint, b, "")
}

// connectProto connects under a protocol revision ("" is the SDK's latest).
func connectProto(t *testing.T, endpoint string, b *bearer, proto string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "test"}, nil)
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: b}}, &mcp.ClientSessionOptions{ProtocolVersion: proto})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	return mcptest.ToolNames(t, t.Context(), cs)
}

func callText(t *testing.T, cs *mcp.ClientSession, name string, args any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err)
	require.Len(t, res.Content, 1)
	return res.Content[0].(*mcp.TextContent).Text, res.IsError
}

func startServer(t *testing.T, opts httpserve.Options) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(httpserve.New(opts))
	t.Cleanup(ts.Close)
	return ts
}

func TestCallers(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ts := startServer(t, httpserve.Options{MCPServer: f.build, Tokens: testTokens(t)})
	endpoint := ts.URL + "/mcp"

	t.Run("no Authorization is nobody", func(t *testing.T) {
		cs := connect(t, endpoint, newBearer(""))
		assert.Empty(t, toolNames(t, cs))
		text, isErr := callText(t, cs, "echo", map[string]any{"text": "hi"})
		assert.True(t, isErr)
		assert.Equal(t, "Error: Unknown tool 'echo'.", text)
	})
	t.Run("a token is its caller", func(t *testing.T) {
		cs := connect(t, endpoint, newBearer(aliceToken))
		assert.Equal(t, []string{"echo", "slow"}, toolNames(t, cs))
		text, isErr := callText(t, cs, "echo", map[string]any{"text": "hi"})
		assert.False(t, isErr)
		assert.Equal(t, "hi", text)
		text, isErr = callText(t, cs, "report", nil)
		assert.True(t, isErr)
		assert.Equal(t, "Error: Unknown tool 'report'.", text)
	})
	t.Run("roles come from the token", func(t *testing.T) {
		cs := connect(t, endpoint, newBearer(carolToken))
		assert.Equal(t, []string{"echo", "report", "slow"}, toolNames(t, cs))
		text, isErr := callText(t, cs, "report", map[string]any{"text": "q3"})
		assert.False(t, isErr)
		assert.Equal(t, "q3", text)
	})
}

func TestNoTokensEveryoneIsNobody(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ts := startServer(t, httpserve.Options{MCPServer: f.build})
	cs := connect(t, ts.URL+"/mcp", newBearer(carolToken))
	assert.Empty(t, toolNames(t, cs))
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

func rawPost(t *testing.T, url string, header map[string]string) *http.Response {
	t.Helper()
	return postBody(t, url, []byte(initialize), header)
}

func TestUnknownTokenIs401(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ts := startServer(t, httpserve.Options{MCPServer: f.build, Tokens: testTokens(t)})
	for name, auth := range map[string]string{
		"unknown token":   "Bearer not-a-known-token",
		"other scheme":    "Basic " + aliceToken,
		"empty":           "",
		"scheme only":     "Bearer",
		"lowercase known": "bearer " + "x" + aliceToken,
	} {
		t.Run(name, func(t *testing.T) {
			resp := rawPost(t, ts.URL+"/mcp", map[string]string{"Authorization": auth})
			assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
			assert.True(t, strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer"), "WWW-Authenticate: %q", resp.Header.Get("WWW-Authenticate"))
			body, _ := io.ReadAll(resp.Body)
			assert.NotContains(t, string(body), aliceToken)
		})
	}
	t.Run("known token, scheme in any case", func(t *testing.T) {
		resp := rawPost(t, ts.URL+"/mcp", map[string]string{"Authorization": "bearer " + aliceToken})
		assert.Equal(t, http.StatusOK, resp.StatusCode)
	})
	t.Run("no Authorization", func(t *testing.T) {
		resp := rawPost(t, ts.URL+"/mcp", nil)
		assert.Equal(t, http.StatusOK, resp.StatusCode)
	})
}

// TestSessionOwnership pins the session rules of the revisions that have
// sessions (up to 2025-11-25); 2026-07-28 has none.
func TestSessionOwnership(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ts := startServer(t, httpserve.Options{MCPServer: f.build, Tokens: testTokens(t)})
	endpoint := ts.URL + "/mcp"

	carol := carolToken
	for _, tc := range []struct {
		name  string
		from  string   // the session's token ("": nobody)
		sees  []string // its listing
		to    *string  // the token of the next request (nil: none)
		which string
	}{
		{"a nobody session refuses a token", "", nil, &carol, "carol on nobody's session"},
		{"a token's session refuses other subjects and nobody", aliceToken, []string{"echo", "slow"}, &carol, "carol on alice's session"},
		{"a token's session refuses nobody", aliceToken, []string{"echo", "slow"}, nil, "nobody on alice's session"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBearer(tc.from)
			cs := connectProto(t, endpoint, b, "2025-11-25")
			if tc.sees == nil {
				assert.Empty(t, toolNames(t, cs))
			} else {
				assert.Equal(t, tc.sees, toolNames(t, cs))
			}
			b.token.Store(tc.to)
			_, err := cs.ListTools(t.Context(), nil)
			require.Error(t, err, tc.which)
		})
	}
}

func TestHealthzAndMetrics(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "toolgate_up 1\n") })
	ts := startServer(t, httpserve.Options{
		MCPServer: f.build,
		Tokens:    testTokens(t),
		Health: func() any {
			return map[string]any{"status": "ok", "revision": 3, "hash": "abc", "lastReloadError": nil}
		},
		Metrics: metrics,
	})
	get := func(path, token string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, ts.URL+path, nil)
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	code, body := get("/healthz", "")
	assert.Equal(t, http.StatusOK, code)
	assert.JSONEq(t, `{"status":"ok","revision":3}`, body)
	code, body = get("/healthz?verbose=1", carolToken)
	assert.Equal(t, http.StatusOK, code)
	assert.JSONEq(t, `{"status":"ok","revision":3,"hash":"abc","lastReloadError":null}`, body)
	code, body = get("/metrics", carolToken)
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "toolgate_up 1\n", body)

	plain := startServer(t, httpserve.Options{MCPServer: newFixture(t).build})
	code, _ = get2(t, plain.URL+"/metrics")
	assert.Equal(t, http.StatusNotFound, code)
	code, body = get2(t, plain.URL+"/healthz")
	assert.Equal(t, http.StatusOK, code)
	assert.JSONEq(t, `{"status":"ok"}`, body)
}

func get2(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestGracefulShutdown(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	srv := httpserve.New(httpserve.Options{MCPServer: f.build, Tokens: testTokens(t), ShutdownGrace: 20 * time.Second})
	cancel, addr, served := listen(t, srv)
	endpoint := "http://" + addr + "/mcp"

	cs := connect(t, endpoint, newBearer(aliceToken))
	var (
		wg   sync.WaitGroup
		res  *mcp.CallToolResult
		cerr error
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		res, cerr = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "slow"})
	}()
	<-f.started
	cancel() // shutdown begins with the call in flight
	// New connections are refused while the call finishes.
	hostport := strings.TrimSuffix(strings.TrimPrefix(endpoint, "http://"), "/mcp")
	assert.Eventually(t, func() bool {
		c, err := net.DialTimeout("tcp", hostport, time.Second)
		if err == nil {
			_ = c.Close()
		}
		return err != nil
	}, time.Minute, 10*time.Millisecond) // a failure bound only: a loaded machine may take seconds
	close(f.release)
	wg.Wait()
	require.NoError(t, cerr)
	require.False(t, res.IsError)
	assert.Equal(t, "slept", res.Content[0].(*mcp.TextContent).Text)
	select {
	case err := <-served:
		require.NoError(t, err)
	case <-time.After(time.Minute): // a failure bound only
		t.Fatal("ListenAndServe did not return after shutdown")
	}
	assert.EqualValues(t, 1, f.afters.Load(), "the in-flight call's after hooks ran")
	for range f.server.Sessions() {
		t.Error("a session survived shutdown")
	}
}

func TestShutdownGraceExpires(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	srv := httpserve.New(httpserve.Options{MCPServer: f.build, Tokens: testTokens(t), ShutdownGrace: 200 * time.Millisecond})
	cancel, addr, served := listen(t, srv)
	cs := connect(t, "http://"+addr+"/mcp", newBearer(aliceToken))
	go func() { _, _ = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "slow"}) }()
	<-f.started
	cancel()
	select {
	case err := <-served:
		require.ErrorContains(t, err, "grace period")
	case <-time.After(time.Minute): // a failure bound only
		t.Fatal("ListenAndServe did not return after the grace period")
	}
	// The method saw its context cancelled; the call's after hooks ran.
	assert.Eventually(t, func() bool { return f.afters.Load() == 1 }, time.Minute, 10*time.Millisecond)
	close(f.release)
}

func TestCallerFromRequest(t *testing.T) {
	t.Parallel()
	for _, req := range []mcp.Request{nil, &mcp.ListToolsRequest{}, &mcp.ListToolsRequest{Extra: &mcp.RequestExtra{}}} {
		c, source := httpserve.CallerFromRequest(context.Background(), req)
		assert.Nil(t, c)
		assert.Empty(t, source)
	}
}

// TestStateless: the go-sdk's stateful handler does not serve the
// 2026-07-28 revision (the client falls back to 2025-11-25); a stateless
// handler does, and callers are read the same way.
func TestStateless(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ts := startServer(t, httpserve.Options{MCPServer: f.build, Tokens: testTokens(t), Streamable: &mcp.StreamableHTTPOptions{Stateless: true}})
	cs := connect(t, ts.URL+"/mcp", newBearer(carolToken))
	assert.Equal(t, "2026-07-28", cs.InitializeResult().ProtocolVersion)
	assert.Equal(t, []string{"echo", "report", "slow"}, toolNames(t, cs))
	nobody := connect(t, ts.URL+"/mcp", newBearer(""))
	assert.Empty(t, toolNames(t, nobody))
	text, _ := callText(t, nobody, "echo", map[string]any{"text": "x"})
	assert.Equal(t, "Error: Unknown tool 'echo'.", text)

	// The default (stateful) server routes 2026-07-28 requests to a
	// stateless handler, so that revision is served too.
	both := startServer(t, httpserve.Options{MCPServer: newFixture(t).build, Tokens: testTokens(t)})
	cs2 := connect(t, both.URL+"/mcp", newBearer(carolToken))
	assert.Equal(t, "2026-07-28", cs2.InitializeResult().ProtocolVersion)
	assert.Equal(t, []string{"echo", "report", "slow"}, toolNames(t, cs2))
}
