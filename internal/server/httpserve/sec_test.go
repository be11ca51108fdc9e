package httpserve_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/server/httpserve"
	"github.com/toolgate/toolgate/mcpadapter"
)

// These tests pin docs/contract.md §11: what an anonymous request may cost.

// listen serves srv on a loopback port until the test ends; it returns the
// address and a channel with ListenAndServe's result.
func listen(t *testing.T, srv *httpserve.Server) (context.CancelFunc, string, <-chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan net.Addr, 1)
	served := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		served <- srv.ListenAndServe(ctx, "127.0.0.1:0", func(a net.Addr) { addrc <- a })
		close(done)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("ListenAndServe did not return")
		}
	})
	return cancel, (<-addrc).String(), served
}

// rawRequest writes head (a request without its body) and body on a new
// connection and returns the response status line.
func rawRequest(t *testing.T, addr, head string, body []byte) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(20*time.Second)))
	_, err = io.WriteString(c, head)
	require.NoError(t, err)
	go func() { _, _ = c.Write(body) }() // the server may answer before it reads it all
	line, err := bufio.NewReader(c).ReadString('\n')
	require.NoError(t, err, "no answer")
	return strings.TrimSpace(line)
}

func mcpPost(addr string, length int, extra string) string {
	return fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n%s\r\n", addr, length, extra)
}

// TestBodyOver4MiBIs413: a body over 4 MiB gets 413: at once when
// Content-Length says so (without waiting for the body), and once the limit
// is passed when it comes chunked.
func TestBodyOver4MiBIs413(t *testing.T) {
	t.Parallel()
	srv := httpserve.New(httpserve.Options{MCPServer: newFixture(t).build})
	_, addr, _ := listen(t, srv)
	// Only the headers: the answer must not wait for the body.
	assert.Equal(t, "HTTP/1.1 413 Request Entity Too Large", rawRequest(t, addr, mcpPost(addr, mcpadapter.MaxBodyBytes+1, ""), nil))

	body := bytes.Repeat([]byte(" "), mcpadapter.MaxBodyBytes+1)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+addr+"/mcp", io.MultiReader(bytes.NewReader(body))) // no length: chunked
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)

	// 4 MiB exactly is read (and refused by the SDK as not JSON-RPC).
	resp2 := postBody(t, "http://"+addr+"/mcp", bytes.Repeat([]byte(" "), mcpadapter.MaxBodyBytes), nil)
	assert.NotEqual(t, http.StatusRequestEntityTooLarge, resp2.StatusCode)
}

func postBody(t *testing.T, url string, body []byte, header map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

// initSession opens a session with a raw initialize under proto and
// returns its id.
func initSession(t *testing.T, url, proto, token string) string {
	t.Helper()
	h := map[string]string{}
	if token != "" {
		h["Authorization"] = "Bearer " + token
	}
	body := strings.Replace(initialize, "2025-06-18", proto, 1)
	resp := postBody(t, url, []byte(body), h)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	_, _ = io.Copy(io.Discard, resp.Body)
	id := resp.Header.Get("Mcp-Session-Id")
	require.NotEmpty(t, id)
	h["Mcp-Session-Id"] = id
	h["Mcp-Protocol-Version"] = proto
	resp = postBody(t, url, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), h)
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	return id
}

// TestBatchOverCapRefusedWhole: a 2025-03-26 batch of more than mcpadapter.MaxBatch
// messages is refused whole with HTTP 400 and a JSON-RPC error; one of
// MaxBatch is served.
func TestBatchOverCapRefusedWhole(t *testing.T) {
	t.Parallel()
	ts := startServer(t, httpserve.Options{MCPServer: newFixture(t).build})
	url := ts.URL + "/mcp"
	id := initSession(t, url, "2025-03-26", "")
	batch := func(n int) []byte {
		msgs := make([]string, n)
		for i := range msgs {
			msgs[i] = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, i+1)
		}
		return []byte("[" + strings.Join(msgs, ",") + "]")
	}
	h := map[string]string{"Mcp-Session-Id": id, "Mcp-Protocol-Version": "2025-03-26"}

	resp := postBody(t, url, batch(mcpadapter.MaxBatch), h)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	all, _ := io.ReadAll(resp.Body)
	assert.Equal(t, mcpadapter.MaxBatch, strings.Count(string(all), `"result"`), "every ping answered")

	resp = postBody(t, url, batch(mcpadapter.MaxBatch+1), h)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	var rpc struct {
		ID    any `json:"id"`
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&rpc))
	assert.Equal(t, -32600, rpc.Error.Code)
	assert.Nil(t, rpc.ID)
	assert.Equal(t, "batch of more than 100 messages", rpc.Error.Message)

	// 1 MiB of [{},{},…] is refused by the cap, having read only its start.
	resp = postBody(t, url, emptyObjects(1<<20), h)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
}

// emptyObjects is a batch of {} of about n bytes.
func emptyObjects(n int) []byte {
	b := make([]byte, 0, n+3)
	b = append(b, '[')
	for len(b) < n-3 {
		b = append(b, "{},"...)
	}
	return append(b, "{}]"...)
}

// TestSessionsCappedAtMaxSessions: past MaxSessions, initialize gets 503; the
// sessions, goroutines and heap stay bounded.
func TestSessionsCappedAtMaxSessions(t *testing.T) {
	t.Parallel()
	const max, tries = 1000, 10000
	f := newFixture(t)
	srv := httpserve.New(httpserve.Options{MCPServer: f.build, Settings: httpserve.Settings{MaxSessions: max}})
	_, addr, _ := listen(t, srv)
	url := "http://" + addr + "/mcp"

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	goroutinesBefore := runtime.NumGoroutine()

	var ok, full, other atomic.Int32
	var wg sync.WaitGroup
	next := make(chan struct{})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	t.Cleanup(client.CloseIdleConnections)
	for range 8 {
		wg.Go(func() {
			for range next {
				req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(initialize))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				resp, err := client.Do(req)
				if err != nil {
					other.Add(1)
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				switch resp.StatusCode {
				case http.StatusOK:
					ok.Add(1)
				case http.StatusServiceUnavailable:
					full.Add(1)
				default:
					other.Add(1)
				}
			}
		})
	}
	for range tries {
		next <- struct{}{}
	}
	close(next)
	wg.Wait()

	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	goroutinesAfter := runtime.NumGoroutine()
	t.Logf("%d initialize: %d served, %d refused with 503; sessions %d; goroutines %d → %d; heap %.1f → %.1f MiB",
		tries, ok.Load(), full.Load(), srv.SessionCount(), goroutinesBefore, goroutinesAfter,
		float64(before.HeapAlloc)/(1<<20), float64(after.HeapAlloc)/(1<<20))
	assert.EqualValues(t, max, ok.Load())
	assert.EqualValues(t, tries-max, full.Load())
	assert.Zero(t, other.Load())
	assert.Equal(t, max, srv.SessionCount())
	// Generous bounds: a few goroutines per session, and well under what
	// 10 000 sessions would hold.
	assert.Less(t, goroutinesAfter, goroutinesBefore+5*max+100)
	assert.Less(t, after.HeapAlloc, before.HeapAlloc+200<<20)
}

// TestIdleSessionExpires: a session without requests for
// SessionTimeout is closed; its id is then unknown.
//
// The session is opened by a lone initialize: a request after it (the
// initialized notification an SDK client sends) would have to arrive
// within the timeout, which a loaded machine does not promise. The
// timeout then runs only from the end of initialize, so nothing the test
// does races it; it is long enough that the SDK's own set-up of the
// session (from arming its timer to the initialize it serves) fits in it
// however slow the machine.
func TestIdleSessionExpires(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	srv := httpserve.New(httpserve.Options{MCPServer: f.build, Settings: httpserve.Settings{SessionTimeout: time.Second}})
	ts := httptest_NewServer(t, srv)
	resp := postBody(t, ts.URL+"/mcp", []byte(initialize), nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Contains(t, string(body), `"protocolVersion":"2025-06-18"`)
	id := resp.Header.Get("Mcp-Session-Id")
	require.NotEmpty(t, id)
	require.Eventually(t, func() bool { return srv.SessionCount() == 0 }, time.Minute, 10*time.Millisecond, "the idle session was not closed")
	for range f.server.Sessions() {
		t.Error("the SDK still has the session")
	}
	resp = postBody(t, ts.URL+"/mcp", []byte(`{"jsonrpc":"2.0","id":2,"method":"ping"}`), map[string]string{"Mcp-Session-Id": id, "Mcp-Protocol-Version": "2025-06-18"})
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
}

// TestSessionBoundToOpener: a session serves only requests with the
// credentials of whoever opened it (nobody, or a subject), whatever the
// method; the others get 403 and leave the session alive.
func TestSessionBoundToOpener(t *testing.T) {
	t.Parallel()
	ts := startServer(t, httpserve.Options{MCPServer: newFixture(t).build, Tokens: testTokens(t)})
	url := ts.URL + "/mcp"
	for _, tc := range []struct{ opener, requester string }{
		{"", aliceToken}, {"", carolToken}, {aliceToken, ""}, {aliceToken, carolToken},
	} {
		for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
			t.Run(fmt.Sprintf("%s by %q on a session of %q", method, tc.requester, tc.opener), func(t *testing.T) {
				t.Parallel()
				id := initSession(t, url, "2025-11-25", tc.opener)
				do := func(method, token string) int {
					var body io.Reader
					if method == http.MethodPost {
						body = strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
					}
					ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a failure bound only
					defer cancel()
					req, err := http.NewRequestWithContext(ctx, method, url, body)
					require.NoError(t, err)
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Accept", "application/json, text/event-stream")
					req.Header.Set("Mcp-Session-Id", id)
					req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
					if token != "" {
						req.Header.Set("Authorization", "Bearer "+token)
					}
					resp, err := http.DefaultClient.Do(req)
					require.NoError(t, err)
					resp.Body.Close() // a GET stream ends here
					return resp.StatusCode
				}
				assert.Equal(t, http.StatusForbidden, do(method, tc.requester))
				// The opener still has it.
				assert.Equal(t, http.StatusOK, do(http.MethodPost, tc.opener))
				assert.Equal(t, http.StatusNoContent, do(http.MethodDelete, tc.opener))
			})
		}
	}
}

func httptest_NewServer(t *testing.T, h http.Handler) *struct{ URL string } {
	t.Helper()
	srv, ok := h.(*httpserve.Server)
	require.True(t, ok)
	_, addr, _ := listen(t, srv)
	return &struct{ URL string }{URL: "http://" + addr}
}

// TestHealthzShortUnlessOperatorVerbose: /healthz tells anyone status and revision only;
// the rest is for the operator role at ?verbose=1.
func TestHealthzShortUnlessOperatorVerbose(t *testing.T) {
	t.Parallel()
	full := map[string]any{"status": "degraded", "revision": 2, "hash": "abc", "last_error": "registry: tools[8] (execUrl): unknown field", "reloads": 3}
	ts := startServer(t, httpserve.Options{MCPServer: newFixture(t).build, Tokens: testTokens(t), Health: func() any { return full }})
	for _, tc := range []struct {
		name, path, token string
		code              int
		body              string
	}{
		{"anyone", "/healthz", "", 200, `{"status":"degraded","revision":2}`},
		{"a token", "/healthz", aliceToken, 200, `{"status":"degraded","revision":2}`},
		{"verbose without a token", "/healthz?verbose=1", "", 401, ""},
		{"verbose with an unknown token", "/healthz?verbose=1", "nope", 401, ""},
		{"verbose without the role", "/healthz?verbose=1", aliceToken, 403, ""},
		{"verbose for the operator", "/healthz?verbose=1", carolToken, 200, `{"status":"degraded","revision":2,"hash":"abc","last_error":"registry: tools[8] (execUrl): unknown field","reloads":3}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := getWith(t, ts.URL+tc.path, tc.token, nil)
			assert.Equal(t, tc.code, code)
			if tc.body != "" {
				assert.JSONEq(t, tc.body, body)
			} else {
				assert.NotContains(t, body, "execUrl")
			}
		})
	}
}

func getWith(t *testing.T, url, token string, header map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestHostAndOriginChecked: on a loopback listener a non-loopback Host is
// refused on every path (DNS rebinding); an Origin must be the listener's
// own or an allowed one.
func TestHostAndOriginChecked(t *testing.T) {
	t.Parallel()
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "up 1\n") })
	ts := startServer(t, httpserve.Options{MCPServer: newFixture(t).build, Tokens: testTokens(t), Metrics: metrics,
		Settings: httpserve.Settings{AllowedOrigins: []string{"https://app.example.com"}}})
	port := ts.URL[strings.LastIndex(ts.URL, ":")+1:]
	for _, tc := range []struct {
		name   string
		header map[string]string
		code   int
	}{
		{"rebinding on /healthz", map[string]string{"Host": "evil.example:" + port}, 403},
		{"rebinding, no port", map[string]string{"Host": "evil.example"}, 403},
		{"localhost", map[string]string{"Host": "localhost:" + port}, 200},
		{"own origin", map[string]string{"Origin": "http://127.0.0.1:" + port}, 200},
		{"own origin by name", map[string]string{"Origin": "http://localhost:" + port}, 200},
		{"allowed origin", map[string]string{"Origin": "https://app.example.com"}, 200},
		{"other origin", map[string]string{"Origin": "https://evil.example"}, 403},
		{"other port", map[string]string{"Origin": "http://127.0.0.1:1"}, 403},
		{"null origin", map[string]string{"Origin": "null"}, 403},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, path := range []string{"/healthz", "/metrics", "/nowhere", "/mcp"} {
				code, _ := getWith(t, ts.URL+path, carolToken, tc.header)
				if tc.code == 403 {
					assert.Equal(t, 403, code, path)
				} else {
					assert.NotEqual(t, 403, code, path)
				}
			}
		})
	}
	// And on a POST that would open a session.
	resp := rawPost(t, ts.URL+"/mcp", map[string]string{"Origin": "https://evil.example"})
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
}

// TestMetricsOperatorOnly: /metrics is for the operator role, or
// anyone at MetricsAddr.
func TestMetricsOperatorOnly(t *testing.T) {
	t.Parallel()
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "up 1\n") })
	// The metrics listener takes a port of its own choosing (a port freed
	// for it could be taken by another process first); Serve logs its URL
	// before it reports ready.
	urls := &metricsURL{}
	srv := httpserve.New(httpserve.Options{MCPServer: newFixture(t).build, Tokens: testTokens(t), Metrics: metrics, Settings: httpserve.Settings{MetricsAddr: "127.0.0.1:0"},
		Logger: slog.New(urls)})
	_, addr, _ := listen(t, srv)
	maddr := strings.TrimSuffix(strings.TrimPrefix(urls.get(), "http://"), "/metrics")
	require.NotEmpty(t, maddr, "the metrics URL was not logged")
	for _, tc := range []struct {
		token string
		code  int
	}{{"", 401}, {"nope", 401}, {aliceToken, 403}, {carolToken, 200}} {
		code, body := getWith(t, "http://"+addr+"/metrics", tc.token, nil)
		assert.Equal(t, tc.code, code, "token %q", tc.token)
		if tc.code != 200 {
			assert.NotContains(t, body, "up 1")
		}
	}
	code, body := getWith(t, "http://"+maddr+"/metrics", "", nil)
	assert.Equal(t, 200, code)
	assert.Equal(t, "up 1\n", body)
	code, _ = getWith(t, "http://"+maddr+"/metrics", "", map[string]string{"Host": "evil.example"})
	assert.Equal(t, 403, code)
	code, _ = getWith(t, "http://"+maddr+"/mcp", "", nil)
	assert.Equal(t, 404, code, "the metrics listener serves nothing else")
}

// metricsURL is a log handler that keeps the URL of "toolgate: serving
// metrics".
type metricsURL struct {
	mu  sync.Mutex
	url string
}

func (*metricsURL) Enabled(context.Context, slog.Level) bool { return true }

func (m *metricsURL) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "toolgate: serving metrics" {
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "url" {
			m.mu.Lock()
			m.url = a.Value.String()
			m.mu.Unlock()
		}
		return true
	})
	return nil
}

func (m *metricsURL) WithAttrs([]slog.Attr) slog.Handler { return m }
func (m *metricsURL) WithGroup(string) slog.Handler      { return m }

func (m *metricsURL) get() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.url
}

// TestSlowBodyTimesOut: a body that does not arrive within
// ReadTimeout is answered 408 and its connection closed.
func TestSlowBodyTimesOut(t *testing.T) {
	t.Parallel()
	srv := httpserve.New(httpserve.Options{MCPServer: newFixture(t).build, Settings: httpserve.Settings{ReadTimeout: 200 * time.Millisecond}})
	_, addr, _ := listen(t, srv)
	line := rawRequest(t, addr, mcpPost(addr, 1000, "")+"{", nil)
	assert.Equal(t, "HTTP/1.1 408 Request Timeout", line)
}

// TestSlowConnectionsLeaveHealthzAnswering: 2 000 connections sending a body slowly leave
// /healthz answering; SIGTERM (the context ending) with slow bodies
// pending returns nil at once, not after the grace period (a shutdown that
// waited for the bodies is cut off at the end of the grace and returns an
// error, so no time is measured).
func TestSlowConnectionsLeaveHealthzAnswering(t *testing.T) {
	t.Parallel()
	const slow = 2000
	srv := httpserve.New(httpserve.Options{MCPServer: newFixture(t).build})
	cancel, addr, served := listen(t, srv)
	conns := make([]net.Conn, 0, slow)
	t.Cleanup(func() {
		for _, c := range conns {
			_ = c.Close()
		}
	})
	for range slow {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		conns = append(conns, c)
		_, err = io.WriteString(c, mcpPost(addr, 1000, "")+"{")
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool { return srv.Receiving() == slow }, 30*time.Second, 10*time.Millisecond, "the server did not receive every slow body")

	client := &http.Client{Timeout: time.Minute} // a failure bound only
	resp, err := client.Get("http://" + addr + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	start := time.Now()
	cancel()
	select {
	case err := <-served:
		took := time.Since(start)
		t.Logf("shutdown with %d slow bodies pending took %s", slow, took)
		require.NoError(t, err)
	case <-time.After(2 * time.Minute): // a failure bound only
		t.Fatal("shutdown did not end")
	}
}

// BenchmarkServerLargeBodies: server time of a POST /mcp through the whole
// handler chain (Host, Origin, caller, session gate, body, wire layer) for
// large bodies (1 MiB of empty objects, and bodies just over the 4 MiB cap);
// the SDK refuses what passes.
//
//	go test ./internal/server/httpserve -run '^$' -bench LargeBodies -benchmem
func BenchmarkServerLargeBodies(b *testing.B) {
	f := newFixture(b)
	srv := httpserve.New(httpserve.Options{MCPServer: f.build})
	over := bytes.Repeat([]byte(" "), mcpadapter.MaxBodyBytes+1)
	for _, bc := range []struct {
		name   string
		body   []byte
		length int64
	}{
		{"1MiB_of_empty_objects", emptyObjects(1 << 20), 1 << 20},
		{"4MiB+1_with_length", over, int64(len(over))},
		{"4MiB+1_chunked", over, -1},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.body)))
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest(http.MethodPost, "/mcp", bytes.NewReader(bc.body))
				req.ContentLength = bc.length
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				rec := httptest.NewRecorder()
				srv.ServeHTTP(rec, req)
				if rec.Code != http.StatusBadRequest && rec.Code != http.StatusRequestEntityTooLarge {
					b.Fatalf("status %d", rec.Code)
				}
			}
		})
	}
}

// TestConnectionCapNeverHoldsHealthz: at MaxConnections, idle keep-alive connections
// make room for a new one, and slow bodies do once their deadline passes:
// the cap never holds /healthz for good.
func TestConnectionCapNeverHoldsHealthz(t *testing.T) {
	t.Parallel()
	const max = 3
	srv := httpserve.New(httpserve.Options{MCPServer: newFixture(t).build, Settings: httpserve.Settings{MaxConnections: max, ReadTimeout: 300 * time.Millisecond}})
	_, addr, _ := listen(t, srv)
	health := func(tr *http.Transport) int {
		client := &http.Client{Transport: tr, Timeout: 20 * time.Second}
		resp, err := client.Get("http://" + addr + "/healthz")
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	t.Run("idle connections", func(t *testing.T) {
		for range max {
			tr := &http.Transport{}
			t.Cleanup(tr.CloseIdleConnections)
			require.Equal(t, http.StatusOK, health(tr)) // its connection stays open, idle
		}
		assert.Equal(t, http.StatusOK, health(&http.Transport{DisableKeepAlives: true}))
	})
	t.Run("slow bodies", func(t *testing.T) {
		for range max {
			c, err := net.Dial("tcp", addr)
			require.NoError(t, err)
			t.Cleanup(func() { _ = c.Close() })
			_, err = io.WriteString(c, mcpPost(addr, 1000, "")+"{")
			require.NoError(t, err)
		}
		assert.Equal(t, http.StatusOK, health(&http.Transport{DisableKeepAlives: true}))
	})
}

// TestIsLoopback: which addresses count as loopback, for the Host
// check and for the demo token (docs/contract.md §11). Anything that binds, or may
// resolve to, another interface does not.
func TestIsLoopback(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]bool{
		"127.0.0.1:8787":   true,
		"127.0.0.2:0":      true,
		"[::1]:8787":       true,
		"localhost:8787":   true,
		"LocalHost:0":      true,
		"127.0.0.1":        true,
		"0.0.0.0:8787":     false,
		":8787":            false,
		"[::]:8787":        false,
		"192.168.1.4:8787": false,
		"example.com:8787": false,
		"":                 false,
	} {
		if got := httpserve.IsLoopback(addr); got != want {
			t.Errorf("IsLoopback(%q) = %v, want %v", addr, got, want)
		}
	}
}
