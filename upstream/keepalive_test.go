package upstream

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/testkit/benchdata"
	"github.com/toolgate/toolgate/internal/testkit/testserver"
)

// countingUpstream is the test upstream over streamable HTTP, counting
// the TCP connections it accepted.
func countingUpstream(t testing.TB, name string) (Config, *atomic.Int64) {
	t.Helper()
	srv := testserver.New(testserver.Options{})
	var conns atomic.Int64
	ts := httptest.NewUnstartedServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	ts.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	ts.Start()
	t.Cleanup(ts.Close)
	return Config{Name: name, URL: ts.URL, Timeout: 5 * time.Second}, &conns
}

// TestHTTPUpstreamConnectionsKeptAlive: calls in flight to an HTTP
// upstream, round after round, reuse the connections of the rounds before
// (http.DefaultTransport keeps 2 per host: with 8 calls in flight, every
// round opened 6 connections and closed them after); and what the client
// gets is what the upstream answers, byte for byte.
func TestHTTPUpstreamConnectionsKeptAlive(t *testing.T) {
	t.Parallel()
	up, conns := countingUpstream(t, "up")
	f := newRelayFront(t, up)
	cs, _ := f.connect("alice", nil)
	const inflight, rounds = 8, 10
	call := func(label int) *mcp.CallToolResult {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"ms": 20 + label%2}})
		require.NoError(t, err)
		return res
	}
	var afterFirst int64
	for round := range rounds {
		var wg sync.WaitGroup
		for i := range inflight {
			wg.Go(func() { assert.Equal(t, fmt.Sprintf("slept %d", 20+i%2), textOf(t, call(i))) })
		}
		wg.Wait()
		if round == 0 {
			afterFirst = conns.Load()
		}
	}
	// A connection still being handed back when the next round's call
	// starts is replaced by a new one, which is then kept too: a few, not
	// six a round (what two idle connections a host, the default
	// transport's, would open). How many are still being handed back
	// depends on how busy the machine is, so the bound is half of that.
	opened := conns.Load() - afterFirst
	assert.LessOrEqual(t, opened, int64((rounds-1)*3), "connections opened after the first round (%d in the first)", afterFirst)

	// The answer relayed is the upstream's, byte for byte: the same call
	// made directly, on a client of the SDK's defaults.
	direct, err := mcp.NewClient(&mcp.Implementation{Name: "direct"}, nil).Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: up.URL}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = direct.Close() })
	want, err := direct.CallTool(t.Context(), &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"ms": 1}})
	require.NoError(t, err)
	got, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"ms": 1}})
	require.NoError(t, err)
	wantJSON, err := json.Marshal(want)
	require.NoError(t, err)
	gotJSON, err := json.Marshal(got)
	require.NoError(t, err)
	assert.Equal(t, string(wantJSON), string(gotJSON))
}

// TestIdleCallerSessionsDefault: without MaxIdleCallerSessions, an HTTP
// upstream keeps as many idle caller sessions as it may open (so that
// MaxCallerSessions callers each keep theirs), a stdio or in-process one
// DefaultMaxIdleCallerSessions; a value set is kept for every kind.
func TestIdleCallerSessionsDefault(t *testing.T) {
	t.Parallel()
	cfgs := []Config{{Name: "h", URL: "http://127.0.0.1:1/mcp"}, {Name: "s", Command: []string{"true"}}, memoryConfig("m")}
	p, err := NewPool(cfgs, &Options{MaxCallerSessions: 40})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	assert.Equal(t, 40, p.conns["h"].maxIdle)
	assert.Equal(t, DefaultMaxIdleCallerSessions, p.conns["s"].maxIdle)
	assert.Equal(t, DefaultMaxIdleCallerSessions, p.conns["m"].maxIdle)
	assert.Equal(t, 40+sharedIdleConns, p.conns["h"].creds.transport.MaxIdleConnsPerHost)

	p2, err := NewPool(cfgs, &Options{MaxIdleCallerSessions: 3})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p2.Close()) })
	for _, name := range []string{"h", "s", "m"} {
		assert.Equal(t, 3, p2.conns[name].maxIdle, name)
	}
	assert.Equal(t, DefaultMaxCallerSessions+sharedIdleConns, p2.conns["h"].creds.transport.MaxIdleConnsPerHost)
}

// TestIdleCallerSessionMemory: what an idle caller session to an HTTP
// upstream holds, both ends in this process (toolgate's client session
// and the upstream's server session, their goroutines' stacks included;
// the connections are the transport's, shared by the sessions): logged,
// and bounded, so that MaxIdleCallerSessions of them stay small. Not
// parallel: the live heap and the stacks are the process's.
func TestIdleCallerSessionMemory(t *testing.T) {
	up, _ := httpConfig(t, "up")
	const callers = 32
	p, err := NewPool([]Config{up}, &Options{MaxCallerSessions: callers})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	f := newRelayFrontPool(t, p)
	sessions := make([]*mcp.ClientSession, callers)
	for i := range sessions {
		sessions[i], _ = f.connect(fmt.Sprint("caller", i), nil)
	}
	call := func(cs *mcp.ClientSession) {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"ms": 0}})
		require.NoError(t, err)
		require.Equal(t, "slept 0", textOf(t, res))
	}
	call(sessions[0])
	held := func() int64 {
		heap := benchdata.LiveHeap()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return int64(heap + ms.StackInuse)
	}
	goroutines := runtime.NumGoroutine()
	before := held()
	for _, cs := range sessions[1:] {
		call(cs)
	}
	after := held()
	goroutines = runtime.NumGoroutine() - goroutines
	c := p.conns["up"]
	c.relay.mu.Lock()
	idle := len(c.relay.idle)
	c.relay.mu.Unlock()
	require.Equal(t, callers, idle, "every caller keeps its session")
	per := (after - before) / (callers - 1)
	t.Logf("an idle caller session to an HTTP upstream, both ends: %.1f KiB, %.1f goroutines", float64(per)/1024, float64(goroutines)/(callers-1))
	assert.Less(t, per, int64(128<<10), "bytes per idle caller session")
}
