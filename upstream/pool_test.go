package upstream

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/testkit/testserver"
	"github.com/toolgate/toolgate/methods"
)

// transports runs f against an upstream over stdio (a subprocess), over
// streamable HTTP and in-process.
func transports(t *testing.T, f func(t *testing.T, cfg Config)) {
	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		f(t, memoryConfig("up"))
	})
	t.Run("stdio", func(t *testing.T) {
		t.Parallel()
		f(t, stdioConfig("up"))
	})
	t.Run("http", func(t *testing.T) {
		t.Parallel()
		cfg, _ := httpConfig(t, "up")
		f(t, cfg)
	})
}

func TestProxy(t *testing.T) {
	t.Parallel()
	transports(t, func(t *testing.T, cfg Config) {
		p := newPool(t, cfg)
		ctx := t.Context()

		res, err := call(ctx, t, p, "upstream:up/hello", map[string]any{"name": "ann"})
		require.NoError(t, err)
		assert.False(t, res.IsError)
		assert.Equal(t, "hello, ann", textOf(t, res))

		// The bound arguments are the arguments object, value for value.
		res, err = call(ctx, t, p, "upstream:up/echo", map[string]any{"count": 3, "label": "x", "opts": map[string]any{"k": []any{1.5, "v"}}})
		require.NoError(t, err)
		assert.JSONEq(t, `{"count":3,"label":"x","opts":{"k":[1.5,"v"]}}`, textOf(t, res))

		// An isError result is a result.
		res, err = call(ctx, t, p, "upstream:up/fail", nil)
		require.NoError(t, err)
		assert.True(t, res.IsError)
		assert.Equal(t, "upstream failed", textOf(t, res))

		// A tool the upstream lacks fails inside the tool; the session stays.
		_, err = call(ctx, t, p, "upstream:up/nosuch", nil)
		require.Error(t, err)
		res, err = call(ctx, t, p, "upstream:up/hello", map[string]any{"name": "bo"})
		require.NoError(t, err)
		assert.Equal(t, "hello, bo", textOf(t, res))

		// Arguments are checked against the last listing.
		m, _ := p.Method("upstream:up/hello")
		assert.True(t, m.HasArgument("name"))
		assert.False(t, m.HasArgument("nom"))
		m, _ = p.Method("upstream:up/nosuch")
		assert.True(t, m.HasArgument("anything"), "an unlisted tool does not look like a mismatch")
	})
}

func TestMethodResolution(t *testing.T) {
	t.Parallel()
	p := newPool(t, stdioConfig("up"))
	for _, name := range []string{"demo.echo", "upstream:other/hello", "upstream:up", "upstream:up/"} {
		_, ok := p.Method(name)
		assert.False(t, ok, name)
	}
	// Before any connection, nothing is known: every argument is taken.
	m, ok := p.Method("upstream:up/hello")
	require.True(t, ok)
	assert.True(t, m.HasArgument("whatever"))

	goMethods := methods.Map{}
	goMethods.Register("demo.echo", func(_ context.Context, in struct{ Text string }) (string, error) { return in.Text, nil })
	set := Chain(nil, goMethods, p)
	_, ok = set.Method("demo.echo")
	assert.True(t, ok)
	_, ok = set.Method("upstream:up/hello")
	assert.True(t, ok)
	_, ok = set.Method("demo.none")
	assert.False(t, ok)
}

// failureBound bounds a wait only so that a hang fails the test instead of
// the whole run; nothing is measured against it.
const failureBound = time.Minute

func TestDownUpstreamNeverHangs(t *testing.T) {
	t.Parallel()
	closedCfg, closed := httpConfig(t, "gone")
	closed.Close()
	short := 2 * time.Second
	p := newPool(t,
		Config{Name: "badcmd", Command: []string{"/nonexistent/upstream-server"}, Timeout: short, Import: true},
		Config{Name: "gone", URL: closedCfg.URL, Timeout: short, Import: true},
		// Starts, but never speaks MCP: connecting times out.
		Config{Name: "mute", Command: []string{"sleep", "3600"}, Timeout: 300 * time.Millisecond, Import: true},
		stdioConfig("ok"),
	)
	// ctx only bounds a failure: a call that ends while it has not expired
	// ended by the upstream's own time-out or failure.
	ctx, cancel := context.WithTimeout(t.Context(), failureBound)
	defer cancel()
	for _, name := range []string{"badcmd", "gone", "mute"} {
		for attempt := range 2 {
			_, err := call(ctx, t, p, "upstream:"+name+"/hello", map[string]any{"name": "x"})
			require.Error(t, err, "%s attempt %d", name, attempt)
			assert.ErrorIs(t, err, ErrUnavailable)
			require.NoError(t, ctx.Err(), "%s attempt %d: bounded by the upstream's time-out", name, attempt)
		}
		m, _ := p.Method("upstream:" + name + "/hello")
		assert.True(t, m.HasArgument("name"), "a down upstream is no argument mismatch")
	}

	res, err := call(ctx, t, p, "upstream:ok/hello", map[string]any{"name": "ann"})
	require.NoError(t, err)
	assert.Equal(t, "hello, ann", textOf(t, res))

	assert.Empty(t, p.ImportedRows(ctx), "down upstreams import nothing")
	require.NoError(t, ctx.Err(), "bounded by the upstreams' time-outs")
	cctx, ccancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer ccancel()
	err = p.Connect(cctx)
	for _, name := range []string{"badcmd", "gone", "mute"} {
		assert.ErrorContains(t, err, "upstream "+name+":")
	}
	assert.NotContains(t, err.Error(), "upstream ok:")
}

func TestHangingToolTimesOut(t *testing.T) {
	t.Parallel()
	transports(t, func(t *testing.T, cfg Config) {
		// The time-out ends the hanging call; the call after it answers in
		// milliseconds, so it is generous there on a loaded machine too.
		cfg.Timeout = 3 * time.Second
		p := newPool(t, cfg)
		ctx, cancel := context.WithTimeout(t.Context(), failureBound)
		defer cancel()
		require.NoError(t, p.Connect(ctx))

		_, err := call(ctx, t, p, "upstream:up/slow", map[string]any{"ms": 60_000})
		require.ErrorIs(t, err, ErrTimeout, "ended by the upstream's time-out, not by the test's bound")
		require.NoError(t, ctx.Err())

		// A slow tool is no broken upstream: the session still serves.
		res, err := call(ctx, t, p, "upstream:up/slow", map[string]any{"ms": 1})
		require.NoError(t, err)
		assert.Equal(t, "slept 1", textOf(t, res))
	})
}

func TestCallerCancellation(t *testing.T) {
	t.Parallel()
	p := newPool(t, stdioConfig("up"))
	// The caller's deadline ends the call: had the pool ignored it, the
	// upstream's own time-out (5 s, stdioConfig) would have, with ErrTimeout.
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	_, err := call(ctx, t, p, "upstream:up/slow", map[string]any{"ms": 60_000})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.NotErrorIs(t, err, ErrTimeout)
}

func TestCrashReconnects(t *testing.T) {
	t.Parallel()
	p := newPool(t, stdioConfig("up"))
	ctx := t.Context()
	require.NoError(t, p.Connect(ctx))
	first := p.pid("up")
	require.NotZero(t, first)

	_, err := call(ctx, t, p, "upstream:up/crash", nil)
	require.Error(t, err)
	assert.NotErrorIs(t, err, ErrTimeout, "a dead upstream fails at once, not at the time-out")

	res, err := call(ctx, t, p, "upstream:up/hello", map[string]any{"name": "again"})
	require.NoError(t, err)
	assert.Equal(t, "hello, again", textOf(t, res))
	second := p.pid("up")
	assert.NotZero(t, second)
	assert.NotEqual(t, first, second, "a new process")
	assertGone(t, first)
}

func TestConcurrentCallsShareOneSession(t *testing.T) {
	t.Parallel()
	p := newPool(t, stdioConfig("up"))
	ctx := t.Context()
	var wg sync.WaitGroup
	pids := make([]int, 8)
	for i := range pids {
		wg.Go(func() {
			res, err := call(ctx, t, p, "upstream:up/hello", map[string]any{"name": "n"})
			if assert.NoError(t, err) {
				assert.Equal(t, "hello, n", textOf(t, res))
			}
			pids[i] = p.pid("up")
		})
	}
	wg.Wait()
	for _, pid := range pids {
		assert.Equal(t, pids[0], pid, "one process serves every call")
	}
}

func TestCloseEndsChildren(t *testing.T) {
	t.Parallel()
	slow := newSlowWatch(t)
	a, b := stdioConfig("a"), stdioConfig("b")
	a.Timeout = time.Hour // only Close may end the call in flight
	p, err := NewPool([]Config{a, b}, &Options{TerminateGrace: 500 * time.Millisecond, Stderr: slow})
	require.NoError(t, err)
	ctx := t.Context()
	require.NoError(t, p.Connect(ctx))
	pids := []int{p.pid("a"), p.pid("b")}

	// A call in flight when the pool closes ends with an error.
	inflight := make(chan error, 1)
	go func() {
		_, err := call(ctx, t, p, "upstream:a/slow", map[string]any{"ms": 3_600_000})
		inflight <- err
	}()
	require.True(t, slow.wait(3_600_000), "the call is in flight")

	// The call would run for an hour: Close returning at all shows it does
	// not wait for calls in flight (the bound is a failure bound only).
	closed := make(chan error, 1)
	go func() { closed <- p.Close() }()
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(failureBound):
		t.Fatal("Close waited for the call in flight")
	}
	require.NoError(t, p.Close(), "idempotent")
	select {
	case err := <-inflight:
		assert.ErrorIs(t, err, ErrClosed)
	case <-time.After(failureBound):
		t.Fatal("the in-flight call outlived Close")
	}
	for _, pid := range pids {
		assertGone(t, pid)
	}
	_, err = call(ctx, t, p, "upstream:b/hello", map[string]any{"name": "x"})
	assert.ErrorIs(t, err, ErrClosed)
}

// assertGone checks that the process pid has exited and been reaped.
func assertGone(t *testing.T, pid int) {
	t.Helper()
	require.NotZero(t, pid)
	require.Eventually(t, func() bool {
		return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
	}, failureBound, 20*time.Millisecond, "process %d still exists", pid)
}

func TestToolsChanged(t *testing.T) {
	t.Parallel()
	changed := make(chan string, 4)
	p, err := NewPool([]Config{memoryConfig("up")}, &Options{ToolsChanged: func(s string) { changed <- s }})
	require.NoError(t, err)
	defer p.Close()
	require.NoError(t, p.Connect(t.Context()))
	select {
	case s := <-changed:
		assert.Equal(t, "up", s, "the first listing is a change")
	case <-time.After(failureBound):
		t.Fatal("no ToolsChanged")
	}
}

func TestHTTPUpstreamGoesAwayAndReturns(t *testing.T) {
	t.Parallel()
	srv := testserver.New(testserver.Options{})
	// The session the first server held is never DELETEd (the server is
	// gone by then): the test ends what the server still holds. (An idle
	// timeout short enough to end it first could also end a session
	// between two of the pool's requests on a loaded machine.)
	t.Cleanup(func() {
		for ss := range srv.Sessions() {
			_ = ss.Close()
		}
	})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	// The port stays this test's while the server is gone (another
	// process could take a freed one): connections to it are closed as
	// soon as they are accepted, as a server that went away fails them.
	port := keepPort(t)
	serve := func() *http.Server {
		hs, l := &http.Server{Handler: handler}, port.listener()
		go func() { _ = hs.Serve(l) }()
		return hs
	}
	hs, addr := serve(), port.ln.Addr().String()
	// The upstream's time-out is a failure bound: calls that must answer
	// are not cut off on a loaded machine, and the call to the server
	// that went away fails at once, long before it.
	p := newPool(t, Config{Name: "web", URL: "http://" + addr + "/mcp", Timeout: 30 * time.Second}, memoryConfig("other"))
	ctx := t.Context()

	res, err := call(ctx, t, p, "upstream:web/hello", map[string]any{"name": "a"})
	require.NoError(t, err)
	assert.Equal(t, "hello, a", textOf(t, res))

	require.NoError(t, hs.Close())
	_, err = call(ctx, t, p, "upstream:web/hello", map[string]any{"name": "b"})
	require.Error(t, err)
	assert.NotErrorIs(t, err, ErrTimeout, "a server that went away fails at once, not at the time-out")

	res, err = call(ctx, t, p, "upstream:other/hello", map[string]any{"name": "c"})
	require.NoError(t, err, "the other upstream keeps working")
	assert.Equal(t, "hello, c", textOf(t, res))

	hs = serve()
	defer hs.Close()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		res, err := call(ctx, t, p, "upstream:web/hello", map[string]any{"name": "d"})
		if assert.NoError(c, err) {
			assert.Equal(c, "hello, d", textOf(t, res))
		}
	}, failureBound, 100*time.Millisecond, "reconnects once the upstream is back")
}

// keptPort is a listening port that outlives the HTTP servers served on
// it in turn: while none is, a connection is closed once accepted.
type keptPort struct {
	ln  net.Listener
	mu  sync.Mutex
	cur *keptListener // nil: no server
}

// keptListener is one server's view of a keptPort; closing it (as
// http.Server.Close does) leaves the port open.
type keptListener struct {
	port  *keptPort
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func keepPort(t *testing.T) *keptPort {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	k := &keptPort{ln: ln}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			k.mu.Lock()
			l := k.cur
			k.mu.Unlock()
			if l == nil {
				_ = c.Close()
				continue
			}
			select {
			case l.conns <- c:
			case <-l.done:
				_ = c.Close()
			}
		}
	}()
	return k
}

// listener attaches a new server's listener to the port.
func (k *keptPort) listener() net.Listener {
	l := &keptListener{port: k, conns: make(chan net.Conn), done: make(chan struct{})}
	k.mu.Lock()
	k.cur = l
	k.mu.Unlock()
	return l
}

func (l *keptListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *keptListener) Close() error {
	l.once.Do(func() {
		close(l.done)
		l.port.mu.Lock()
		if l.port.cur == l {
			l.port.cur = nil
		}
		l.port.mu.Unlock()
	})
	return nil
}

func (l *keptListener) Addr() net.Addr { return l.port.ln.Addr() }
