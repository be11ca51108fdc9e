package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// floodStreams is how many streams each flood opens: more than the
// default --max-connections (4096).
const floodStreams = 4100

// TestStreamFloodLeavesRoomForOthers: 4 100 streams opened by one
// anonymous client, then by one signed-in caller without the operator
// role, through the binary with its default limits, leave /healthz and an
// operator's tools/call answering. Nobody gets no stream; a caller's
// streams are capped; the console's approval events need an approver (a
// caller who is none is answered 204 and holds nothing).
// Latencies are measured and logged, not asserted.
func TestStreamFloodLeavesRoomForOthers(t *testing.T) {
	skipShort(t)
	// This process holds a flood's connections, the binary (which
	// inherits the limit) up to --max-connections of them.
	raiseOpenFiles(t, floodStreams+512)
	s := serveHTTP(t, "--tokens", writeTokens(t))
	addr := strings.TrimPrefix(s.base, "http://")
	admin := s.connect(t, adminToken, "2025-11-25", nil)

	// Each session has one standalone stream: the flood opens sessions
	// first (as many as it may: nobody's share of --max-sessions is a
	// quarter), then one GET per stream.
	anonSessions := openSessions(t, s.url, "", floodStreams)
	t.Logf("anonymous: %d sessions opened of %d asked", len(anonSessions), floodStreams)
	require.NotEmpty(t, anonSessions)
	anon := flood(t, addr, floodStreams, func(i int) string {
		return streamGET("/mcp", addr, anonSessions[i%len(anonSessions)], "")
	})
	t.Logf("anonymous flood of %d GET /mcp: %v", floodStreams, anon.statuses)
	assert.Zero(t, anon.statuses[http.StatusOK], "nobody gets no stream")
	othersAnswer(t, s, admin, "anonymous flood")
	anon.close()

	mgrSessions := openSessions(t, s.url, managerToken, floodStreams/2)
	require.Len(t, mgrSessions, floodStreams/2)
	mgr := flood(t, addr, floodStreams, func(i int) string {
		if i%2 == 0 {
			return streamGET("/mcp", addr, mgrSessions[i/2], managerToken)
		}
		return streamGET("/console/api/approvals/events", addr, "", managerToken)
	})
	t.Logf("signed-in non-operator flood of %d streams (GET /mcp, approval events): %v", floodStreams, mgr.statuses)
	assert.LessOrEqual(t, mgr.statuses[http.StatusOK], 8, "a caller's streams are capped")
	assert.Positive(t, mgr.statuses[http.StatusTooManyRequests])
	assert.Positive(t, mgr.statuses[http.StatusNoContent], "approval events need an approver role: none for the manager")
	othersAnswer(t, s, admin, "signed-in flood")
	mgr.close()
}

// raiseOpenFiles lifts this process's open-file limit (the binary
// inherits it) to at least n, up to the hard limit.
func raiseOpenFiles(t *testing.T, n uint64) {
	t.Helper()
	var lim syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim))
	if lim.Cur >= n {
		return
	}
	lim.Cur = min(max(n, lim.Cur), lim.Max)
	require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim))
	if lim.Cur < n {
		if os.Getenv("CI") != "" {
			t.Fatalf("the open-file limit is %d (hard); the flood needs %d; CI is set, so this is a failure", lim.Cur, n)
		}
		t.Skipf("the open-file limit is %d (hard); the flood needs %d", lim.Cur, n)
	}
}

// openSessions opens up to n sessions with token ("" for nobody) from
// eight workers and returns the ids of those the server opened.
func openSessions(t *testing.T, url, token string, n int) []string {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	defer client.CloseIdleConnections()
	post := func(body string, h map[string]string) (*http.Response, error) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range h {
			req.Header.Set(k, v)
		}
		resp, err := client.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return resp, err
	}
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"flood","version":"0"}}}`
	var (
		mu  sync.Mutex
		ids []string
		wg  sync.WaitGroup
	)
	next := make(chan struct{})
	for range 8 {
		wg.Go(func() {
			for range next {
				h := map[string]string{}
				if token != "" {
					h["Authorization"] = "Bearer " + token
				}
				resp, err := post(initialize, h)
				if err != nil || resp.StatusCode != http.StatusOK {
					continue
				}
				h["Mcp-Session-Id"] = resp.Header.Get("Mcp-Session-Id")
				h["Mcp-Protocol-Version"] = "2025-11-25"
				if resp, err := post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, h); err == nil && resp.StatusCode == http.StatusAccepted {
					mu.Lock()
					ids = append(ids, h["Mcp-Session-Id"])
					mu.Unlock()
				}
			}
		})
	}
	for range n {
		next <- struct{}{}
	}
	close(next)
	wg.Wait()
	return ids
}

// streamGET is the raw request for a stream at path, on session id ("":
// none) with token ("": none).
func streamGET(path, host, id, token string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "GET %s HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\nMcp-Protocol-Version: 2025-11-25\r\n", path, host)
	if id != "" {
		fmt.Fprintf(&b, "Mcp-Session-Id: %s\r\n", id)
	}
	if token != "" {
		fmt.Fprintf(&b, "Authorization: Bearer %s\r\n", token)
	}
	b.WriteString("\r\n")
	return b.String()
}

// flooded are the connections of a flood, kept open, and the statuses
// they were answered (0: no answer, or the connection failed).
type flooded struct {
	conns    []net.Conn
	statuses map[int]int
}

func (f *flooded) close() {
	for _, c := range f.conns {
		_ = c.Close()
	}
}

// flood opens n connections, each sending request(i) and never closing,
// and waits for every status line (or for the connection to fail: the
// server closes idle ones at its cap).
func flood(t *testing.T, addr string, n int, request func(i int) string) *flooded {
	t.Helper()
	f := &flooded{statuses: map[int]int{}}
	t.Cleanup(f.close)
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	for i := range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			f.statuses[0]++
			continue
		}
		f.conns = append(f.conns, c)
		if _, err := io.WriteString(c, request(i)); err != nil {
			f.statuses[0]++
			continue
		}
		wg.Go(func() {
			// A failure bound only: a server holding every connection never answers.
			_ = c.SetReadDeadline(time.Now().Add(2 * time.Minute))
			status := 0
			if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
				status = resp.StatusCode
			}
			_ = c.SetReadDeadline(time.Time{})
			mu.Lock()
			f.statuses[status]++
			mu.Unlock()
		})
	}
	wg.Wait()
	return f
}

// othersAnswer checks that /healthz and an operator's tools/call (on a
// session opened before the flood, and on one opened during it) answer
// while a flood holds its connections, and logs how long they took.
func othersAnswer(t *testing.T, s *served, admin *mcp.ClientSession, during string) {
	t.Helper()
	start := time.Now()
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 2 * time.Minute} // a failure bound only
	resp, err := hc.Get(s.base + "/healthz")
	require.NoError(t, err, "/healthz during the %s", during)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	health := time.Since(start)

	start = time.Now()
	assert.Equal(t, ok("5"), call(t, admin, "add", map[string]any{"a": 2, "b": 3}, nil))
	opCall := time.Since(start)

	start = time.Now()
	fresh := s.connect(t, adminToken, "2025-11-25", nil)
	assert.Equal(t, ok("5"), call(t, fresh, "add", map[string]any{"a": 2, "b": 3}, nil))
	opNew := time.Since(start)
	t.Logf("during the %s: /healthz %v; operator's tools/call %v; a new operator session and call %v", during, health, opCall, opNew)
}
