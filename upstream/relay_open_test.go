package upstream

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/testkit/testserver"
	"github.com/toolgate/toolgate/mcpadapter"
)

// TestRelayConcurrentFirstCalls: 20 calls of one caller at once, from its
// first, over streamable HTTP and over stdio, with the pool's defaults
// (a caller's share is 16 sessions): every call is answered (docs/relay.md,
// "Many at once"). The calls overlap (each sleeps upstream), so that calls
// that each opened a session of their own would find the caller's share
// taken.
func TestRelayConcurrentFirstCalls(t *testing.T) {
	t.Parallel()
	httpUp, _ := httpConfig(t, "up")
	overEachTransport(t, httpUp, func(t *testing.T, _ string, f *relayFront) {
		cs, _ := f.connect("ann", nil)
		const n = 20
		answers := make(chan string, n)
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				res, err := cs.CallTool(t.Context(), slowCall(300))
				if !assert.NoError(t, err) || !assert.Len(t, res.Content, 1) {
					answers <- "no answer"
					return
				}
				answers <- res.Content[0].(*mcp.TextContent).Text
			})
		}
		wg.Wait()
		close(answers)
		got := map[string]int{}
		for a := range answers {
			got[a]++
		}
		assert.Equal(t, map[string]int{"slept 300": n}, got)
	})
}

// gatedUpstream is an in-memory upstream whose connections, once armed,
// wait at a gate before they connect; it counts the connections made.
type gatedUpstream struct {
	armed atomic.Bool
	gate  chan error   // nil (or closed): connect; an error: fail
	opens atomic.Int32 // connections made while armed
	srv   *mcp.Server
}

func (g *gatedUpstream) config(name string) Config {
	return Config{Name: name, Timeout: 5 * time.Second, Transport: func() mcp.Transport {
		if !g.armed.Load() {
			return g
		}
		g.opens.Add(1)
		return gatedTransport{g}
	}}
}

// Connect connects to the server, in memory.
func (g *gatedUpstream) Connect(ctx context.Context) (mcp.Connection, error) {
	ct, st := mcp.NewInMemoryTransports()
	if _, err := g.srv.Connect(context.Background(), st, nil); err != nil {
		return nil, err
	}
	return ct.Connect(ctx)
}

type gatedTransport struct{ g *gatedUpstream }

func (t gatedTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	select {
	case err := <-t.g.gate:
		if err != nil {
			return nil, err
		}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return t.g.Connect(ctx)
}

// waiting is the number of calls waiting for a caller session of c.
func (c *conn) waiting() int {
	r := &c.relay
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, kw := range r.waits {
		n += len(kw.queue)
	}
	return n
}

// eventually polls cond until it holds (a minute bounds a failure only).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(failureBound); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within the failure bound", what)
		}
	}
}

// TestRelayOpensOncePerKey: concurrent first calls of one caller open one
// session of their key, not one each (never raced), and wait for it; the
// first caller giving up does not cancel the open the others wait for
// (it runs on no call's context); a failed open fails every call waiting
// for it, and is not kept: the next call opens again.
func TestRelayOpensOncePerKey(t *testing.T) {
	t.Parallel()
	g := &gatedUpstream{gate: make(chan error), srv: testserver.New(testserver.Options{})}
	p := newPool(t, g.config("up"))
	require.NoError(t, p.Connect(t.Context()), "the shared session, before the gate is armed")
	c := p.conns["up"]
	f := newRelayFrontPool(t, p)
	cs, _ := f.connect("ann", nil)
	g.armed.Store(true)

	first, cancelFirst := context.WithCancel(t.Context())
	firstErr := make(chan error, 1)
	go func() {
		res, err := cs.CallTool(first, slowCall(0))
		if err == nil && !res.IsError {
			err = errors.New("the first call was answered")
		}
		firstErr <- err
	}()
	eventually(t, "the first call waits for its session", func() bool { return c.waiting() == 1 })
	const others = 19
	answers := make(chan string, others)
	for range others {
		go func() {
			res, err := cs.CallTool(t.Context(), slowCall(0))
			if err != nil || len(res.Content) != 1 {
				answers <- "no answer"
				return
			}
			answers <- res.Content[0].(*mcp.TextContent).Text
		}()
	}
	eventually(t, "every call waits", func() bool { return c.waiting() == 1+others })
	assert.Equal(t, int32(1), g.opens.Load(), "one session of the key is being opened, not one per call")

	cancelFirst()
	require.Error(t, recvBounded(t, firstErr))
	eventually(t, "the first call gave up", func() bool { return c.waiting() == others })
	close(g.gate)
	for range others {
		assert.Equal(t, "slept 0", recvBounded(t, answers))
	}

	// A failed open: every call waiting for it gets the failure; the next
	// call opens again (nothing of the failure is kept).
	g2 := &gatedUpstream{gate: make(chan error), srv: testserver.New(testserver.Options{})}
	p2, err := NewPool([]Config{g2.config("up")}, &Options{ConnectTimeout: time.Hour, TerminateGrace: 500 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p2.Close()) })
	require.NoError(t, p2.Connect(t.Context()))
	c2 := p2.conns["up"]
	f2 := newRelayFrontPool(t, p2)
	cs2, _ := f2.connect("bea", nil)
	g2.armed.Store(true)
	failed := make(chan string, 3)
	for range 3 {
		go func() {
			res, err := cs2.CallTool(t.Context(), slowCall(0))
			if err != nil || len(res.Content) != 1 {
				failed <- "no answer"
				return
			}
			failed <- res.Content[0].(*mcp.TextContent).Text
		}()
	}
	eventually(t, "three calls wait", func() bool { return c2.waiting() == 3 })
	require.Equal(t, int32(1), g2.opens.Load())
	g2.gate <- errors.New("refused")
	for range 3 {
		assert.Equal(t, mcpadapter.AnswerInternal, recvBounded(t, failed), "a failed open fails every call waiting for it")
	}
	assert.Zero(t, c2.waiting())
	assert.Zero(t, c2.account().open, "nothing of the failed open is kept")
	go func() { g2.gate <- nil }()
	assert.Equal(t, "slept 0", callText(t.Context(), t, cs2, slowCall(0)), "the next call opens again")
	assert.Equal(t, int32(2), g2.opens.Load())
}
