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

	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/upstream/internal/testserver"
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

	goMethods := mcpadapter.Methods{}
	goMethods.Register("demo.echo", func(_ context.Context, in struct{ Text string }) (string, error) { return in.Text, nil })
	set := Chain(nil, goMethods, p)
	_, ok = set.Method("demo.echo")
	assert.True(t, ok)
	_, ok = set.Method("upstream:up/hello")
	assert.True(t, ok)
	_, ok = set.Method("demo.none")
	assert.False(t, ok)
}

func TestDownUpstreamNeverHangs(t *testing.T) {
	t.Parallel()
	closedCfg, closed := httpConfig(t, "gone")
	closed.Close()
	short := 2 * time.Second
	p := newPool(t,
		Config{Name: "badcmd", Command: []string{"/nonexistent/upstream-server"}, Timeout: short, Import: true},
		Config{Name: "gone", URL: closedCfg.URL, Timeout: short, Import: true},
		// Starts, but never speaks MCP: connecting times out.
		Config{Name: "mute", Command: []string{"sleep", "60"}, Timeout: 300 * time.Millisecond, Import: true},
		stdioConfig("ok"),
	)
	ctx := t.Context()
	for _, name := range []string{"badcmd", "gone", "mute"} {
		for attempt := range 2 {
			start := time.Now()
			_, err := call(ctx, t, p, "upstream:"+name+"/hello", map[string]any{"name": "x"})
			require.Error(t, err, "%s attempt %d", name, attempt)
			assert.ErrorIs(t, err, ErrUnavailable)
			assert.Less(t, time.Since(start), short+time.Second, "%s attempt %d: bounded by the timeout", name, attempt)
		}
		m, _ := p.Method("upstream:" + name + "/hello")
		assert.True(t, m.HasArgument("name"), "a down upstream is no argument mismatch")
	}

	res, err := call(ctx, t, p, "upstream:ok/hello", map[string]any{"name": "ann"})
	require.NoError(t, err)
	assert.Equal(t, "hello, ann", textOf(t, res))

	start := time.Now()
	assert.Empty(t, p.ImportedRows(ctx), "down upstreams import nothing")
	assert.Less(t, time.Since(start), short+time.Second)
	cctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	err = p.Connect(cctx)
	for _, name := range []string{"badcmd", "gone", "mute"} {
		assert.ErrorContains(t, err, "upstream "+name+":")
	}
	assert.NotContains(t, err.Error(), "upstream ok:")
}

func TestHangingToolTimesOut(t *testing.T) {
	t.Parallel()
	transports(t, func(t *testing.T, cfg Config) {
		cfg.Timeout = 300 * time.Millisecond
		p := newPool(t, cfg)
		ctx := t.Context()
		require.NoError(t, p.Connect(ctx))

		start := time.Now()
		_, err := call(ctx, t, p, "upstream:up/slow", map[string]any{"ms": 60_000})
		require.ErrorIs(t, err, ErrTimeout)
		assert.Less(t, time.Since(start), 2*time.Second)

		// A slow tool is no broken upstream: the session still serves.
		res, err := call(ctx, t, p, "upstream:up/slow", map[string]any{"ms": 1})
		require.NoError(t, err)
		assert.Equal(t, "slept 1", textOf(t, res))
	})
}

func TestCallerCancellation(t *testing.T) {
	t.Parallel()
	p := newPool(t, stdioConfig("up"))
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := call(ctx, t, p, "upstream:up/slow", map[string]any{"ms": 60_000})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.NotErrorIs(t, err, ErrTimeout)
	assert.Less(t, time.Since(start), 2*time.Second)
}

func TestCrashReconnects(t *testing.T) {
	t.Parallel()
	p := newPool(t, stdioConfig("up"))
	ctx := t.Context()
	require.NoError(t, p.Connect(ctx))
	first := p.pid("up")
	require.NotZero(t, first)

	start := time.Now()
	_, err := call(ctx, t, p, "upstream:up/crash", nil)
	require.Error(t, err)
	assert.NotErrorIs(t, err, ErrTimeout, "a dead upstream fails at once, not at the time-out")
	assert.Less(t, time.Since(start), 2*time.Second)

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
	p, err := NewPool([]Config{stdioConfig("a"), stdioConfig("b")}, &Options{TerminateGrace: 500 * time.Millisecond})
	require.NoError(t, err)
	ctx := t.Context()
	require.NoError(t, p.Connect(ctx))
	pids := []int{p.pid("a"), p.pid("b")}

	// A call in flight when the pool closes ends with an error.
	inflight := make(chan error, 1)
	go func() {
		_, err := call(ctx, t, p, "upstream:a/slow", map[string]any{"ms": 60_000})
		inflight <- err
	}()
	time.Sleep(100 * time.Millisecond)

	start := time.Now()
	require.NoError(t, p.Close())
	assert.Less(t, time.Since(start), 5*time.Second)
	require.NoError(t, p.Close(), "idempotent")
	assert.Less(t, time.Since(start), 2*time.Second, "in-flight calls do not hold Close up")
	select {
	case err := <-inflight:
		assert.ErrorIs(t, err, ErrClosed)
	case <-time.After(5 * time.Second):
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
	}, 5*time.Second, 20*time.Millisecond, "process %d still exists", pid)
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
	case <-time.After(5 * time.Second):
		t.Fatal("no ToolsChanged")
	}
}

func TestHTTPUpstreamGoesAwayAndReturns(t *testing.T) {
	t.Parallel()
	srv := testserver.New(testserver.Options{})
	// The session the first server held is never DELETEd (the server is
	// gone by then): the idle timeout ends it on the server side.
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{SessionTimeout: 500 * time.Millisecond})
	serve := func(addr string) (*http.Server, string) {
		l, err := net.Listen("tcp", addr)
		require.NoError(t, err)
		hs := &http.Server{Handler: handler}
		go func() { _ = hs.Serve(l) }()
		return hs, l.Addr().String()
	}
	hs, addr := serve("127.0.0.1:0")
	p := newPool(t, Config{Name: "web", URL: "http://" + addr + "/mcp", Timeout: time.Second}, memoryConfig("other"))
	ctx := t.Context()

	res, err := call(ctx, t, p, "upstream:web/hello", map[string]any{"name": "a"})
	require.NoError(t, err)
	assert.Equal(t, "hello, a", textOf(t, res))

	require.NoError(t, hs.Close())
	start := time.Now()
	_, err = call(ctx, t, p, "upstream:web/hello", map[string]any{"name": "b"})
	require.Error(t, err)
	assert.Less(t, time.Since(start), 2*time.Second)

	res, err = call(ctx, t, p, "upstream:other/hello", map[string]any{"name": "c"})
	require.NoError(t, err, "the other upstream keeps working")
	assert.Equal(t, "hello, c", textOf(t, res))

	hs, _ = serve(addr)
	defer hs.Close()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		res, err := call(ctx, t, p, "upstream:web/hello", map[string]any{"name": "d"})
		if assert.NoError(c, err) {
			assert.Equal(c, "hello, d", textOf(t, res))
		}
	}, 10*time.Second, 100*time.Millisecond, "reconnects once the upstream is back")
}
