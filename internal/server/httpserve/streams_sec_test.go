package httpserve_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/server/httpserve"
)

// serveOn runs srv.Serve on a loopback listener until the test ends and
// returns its base URL.
func serveOn(t *testing.T, srv *httpserve.Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln, nil) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return "http://" + ln.Addr().String()
}

// initFresh is initSession over connections that are closed after each
// request: at a small connection cap, a kept-alive connection the server
// closed to make room would fail the next POST.
func initFresh(t *testing.T, url, token string) string {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	post := func(body string, h map[string]string) *http.Response {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range h {
			req.Header.Set(k, v)
		}
		resp, err := client.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	h := map[string]string{}
	if token != "" {
		h["Authorization"] = "Bearer " + token
	}
	resp := post(strings.Replace(initialize, "2025-06-18", "2025-11-25", 1), h)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	h["Mcp-Session-Id"] = resp.Header.Get("Mcp-Session-Id")
	h["Mcp-Protocol-Version"] = "2025-11-25"
	require.Equal(t, http.StatusAccepted, post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, h).StatusCode)
	return h["Mcp-Session-Id"]
}

// getStream opens the standalone GET stream of session id and returns the
// response once its headers arrived (the body stays open).
func getStream(t *testing.T, ctx context.Context, url, id, token string) *http.Response {
	t.Helper()
	req := sessionRequest(t, ctx, http.MethodGet, url, id, token, "")
	if token == "" {
		req.Header.Del("Authorization")
	}
	resp, err := (&http.Client{Transport: &http.Transport{}}).Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// TestNobodyGetsNoStream: a session opened by nobody gets no standalone
// stream (405, Allow without GET), and nobody's subscriptions/listen is
// refused (403): nobody has no tools whose listing could change, and
// anonymous callers could otherwise hold every connection.
func TestNobodyGetsNoStream(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ts := startServer(t, httpserve.Options{MCPServer: f.build, Tokens: testTokens(t)})
	url := ts.URL + "/mcp"
	id := initSession(t, url, "2025-11-25", "")
	resp := getStream(t, t.Context(), url, id, "")
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	assert.Equal(t, "POST, DELETE", resp.Header.Get("Allow"))

	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{}}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)

	// A signed-in caller's stream opens.
	aid := initSession(t, url, "2025-11-25", aliceToken)
	resp = getStream(t, t.Context(), url, aid, aliceToken)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
}

// TestStreamsCappedPerCallerAndAddress: one more stream than a caller may
// hold gets 429 with Retry-After; closing one makes room. The per-address
// cap holds across callers.
func TestStreamsCappedPerCallerAndAddress(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ts := startServer(t, httpserve.Options{MCPServer: f.build, Tokens: testTokens(t), MaxStreamsPerCaller: 2, MaxStreamsPerAddress: 3})
	url := ts.URL + "/mcp"
	// A session has one standalone stream: each stream its own session.
	sess := func(token string) string { return initSession(t, url, "2025-11-25", token) }
	ctx1, close1 := context.WithCancel(t.Context())
	first := getStream(t, ctx1, url, sess(aliceToken), aliceToken)
	require.Equal(t, http.StatusOK, first.StatusCode)
	require.Equal(t, http.StatusOK, getStream(t, t.Context(), url, sess(aliceToken), aliceToken).StatusCode)
	id := sess(aliceToken)
	over := getStream(t, t.Context(), url, id, aliceToken)
	assert.Equal(t, http.StatusTooManyRequests, over.StatusCode)
	assert.Equal(t, "30", over.Header.Get("Retry-After"))
	b, _ := io.ReadAll(over.Body)
	assert.Equal(t, "too many streams for this caller\n", string(b))

	// Another caller from the same address: one more fits, then the
	// address is full.
	require.Equal(t, http.StatusOK, getStream(t, t.Context(), url, sess(carolToken), carolToken).StatusCode)
	over = getStream(t, t.Context(), url, sess(carolToken), carolToken)
	assert.Equal(t, http.StatusTooManyRequests, over.StatusCode)
	b, _ = io.ReadAll(over.Body)
	assert.Equal(t, "too many streams from this address\n", string(b))

	// Closing a stream makes room (its account ends when its handler
	// returns: wait for that, not for a time).
	close1()
	_, _ = io.Copy(io.Discard, first.Body)
	require.Eventually(t, func() bool {
		resp := getStream(t, t.Context(), url, id, aliceToken)
		return resp.StatusCode == http.StatusOK
	}, time.Minute, 10*time.Millisecond)
}

// TestOldestStreamClosedAtItsShare: streams hold at most 3/4 of
// MaxConnections; one more closes the oldest stream's connection, and
// plain requests still find a connection.
func TestOldestStreamClosedAtItsShare(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	srv := httpserve.New(httpserve.Options{MCPServer: f.build, Tokens: testTokens(t), Settings: httpserve.Settings{MaxConnections: 4}, MaxStreamsPerCaller: -1, MaxStreamsPerAddress: -1})
	base := serveOn(t, srv)
	url := base + "/mcp"
	var streams []*http.Response
	for range 3 { // the share of 4
		resp := getStream(t, t.Context(), url, initFresh(t, url, aliceToken), aliceToken)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		streams = append(streams, resp)
	}
	// Every stream opened is open or was closed to make room (at this
	// small cap the listener may close one for a connection too: the
	// oldest either way).
	open, closed := srv.StreamCount()
	require.Equal(t, 3, open+int(closed))
	newest := getStream(t, t.Context(), url, initFresh(t, url, aliceToken), aliceToken)
	require.Equal(t, http.StatusOK, newest.StatusCode)
	// The oldest stream's connection was closed: its body ends.
	_, err := io.Copy(io.Discard, streams[0].Body)
	assert.Error(t, err, "the oldest stream was cut")
	open, closed = srv.StreamCount()
	assert.Equal(t, 4, open+int(closed))
	assert.LessOrEqual(t, open, 3, "streams never hold more than their share")
	assert.GreaterOrEqual(t, closed, uint64(1))

	// A plain request is served beside the streams.
	resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Get(base + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
}

// TestConnectionCapClosesTheOldestStream: at MaxConnections, with no
// idle connection to close, the listener closes the oldest stream's
// connection, so a new request is served instead of waiting for streams
// that last minutes.
func TestConnectionCapClosesTheOldestStream(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	srv := httpserve.New(httpserve.Options{MCPServer: f.build, Tokens: testTokens(t), Settings: httpserve.Settings{MaxConnections: 2}, MaxStreamsPerCaller: -1, MaxStreamsPerAddress: -1})
	base := serveOn(t, srv)
	url := base + "/mcp"
	id := initFresh(t, url, aliceToken)
	stream := getStream(t, t.Context(), url, id, aliceToken)
	require.Equal(t, http.StatusOK, stream.StatusCode)
	// A slow call holds the other slot.
	call := openStream(sessionRequest(t, t.Context(), http.MethodPost, url, id, aliceToken,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{}}}`))
	<-f.started
	t.Cleanup(func() { close(f.release); awaitEnd(t, call, "the slow call") })

	resp, err := (&http.Client{Transport: &http.Transport{}}).Get(base + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	_, err = io.Copy(io.Discard, stream.Body)
	assert.Error(t, err, "the stream was cut to make room")
}

// TestNobodyLeavesSessionsForSignedInCallers: where callers can sign in,
// sessions opened by nobody hold at most a quarter of MaxSessions; a
// signed-in caller still opens one.
func TestNobodyLeavesSessionsForSignedInCallers(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	srv := httpserve.New(httpserve.Options{MCPServer: f.build, Tokens: testTokens(t), Settings: httpserve.Settings{MaxSessions: 8}})
	base := serveOn(t, srv)
	url := base + "/mcp"
	for range 2 {
		initSession(t, url, "2025-11-25", "")
	}
	resp := postBody(t, url, []byte(initialize), map[string]string{})
	_, _ = io.Copy(io.Discard, resp.Body)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "a third anonymous session")
	initSession(t, url, "2025-11-25", aliceToken)
	assert.Equal(t, 3, srv.SessionCount())
}
