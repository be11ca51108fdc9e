package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/backoff"
)

// ErrTimeout is the cause of a call that outlived its upstream's Timeout.
var ErrTimeout = errors.New("upstream: call timed out")

// conn is one upstream: its configuration, its current session (if any) and
// what its last tools/list said.
type conn struct {
	cfg   Config
	pool  *Pool
	creds *credentials // resolved headers, env and auth (credentials.go)
	// maxIdle bounds the idle caller sessions (Options.MaxIdleCallerSessions).
	maxIdle int

	mu   sync.Mutex
	sess *session // live or not yet known dead; nil: none
	// listFrom, for a stdio upstream, is the caller session whose process
	// last said its tools or prompts changed: its listing is the
	// upstream's (listing.go). nil: the shared session's.
	listFrom *session
	dialing  chan struct{} // non-nil while a dial runs; closed when it ends
	lastErr  error         // why the last dial failed or the last session broke
	failures int           // consecutive failed dials
	retryAt  time.Time     // no dial before this
	closed   bool
	tools    []*mcp.Tool // last tools/list, upstream order; nil: never listed
	byName   map[string]*mcp.Tool
	// defs are the last tools/list's definitions as the upstream sent
	// them, by tool name (listTools).
	defs map[string]json.RawMessage

	notices   uint64 // notifications/tools/list_changed received
	noticeAt  time.Time
	relisting bool // a relist goroutine runs

	relay relaySessions // the caller sessions (relay.go)

	handshake handshakeMemo // how its sessions open (handshake.go)
	// sessionless: the upstream keeps no session over streamable HTTP
	// (openCaller): the caller sessions of older clients that may be
	// asked something open on 2026-07-28.
	sessionless atomic.Bool
	// reconnecting is set while a background reconnect waits to dial.
	reconnecting bool
}

// session is one client session to the upstream.
type session struct {
	cs      *mcp.ClientSession
	cmd     *exec.Cmd     // stdio only
	done    chan struct{} // closed once the session has ended, for any reason
	probing atomic.Bool
}

func (s *session) alive() bool {
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// session returns a live session, opening one if there is none. It never
// outlives ctx: a dial keeps running in the background for later callers
// (bounded by the upstream's connect timeout), and an upstream that is backing off
// past ctx's deadline fails at once with ErrUnavailable.
func (c *conn) session(ctx context.Context) (*session, error) {
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, ErrClosed
		}
		if s := c.sess; s != nil {
			if s.alive() {
				c.mu.Unlock()
				return s, nil
			}
			c.dropLocked(s, errors.New("session ended"))
		}
		if upOnly(ctx) {
			c.mu.Unlock()
			return nil, fmt.Errorf("%w: %w", ErrUnavailable, errNotUp)
		}
		if c.dialing == nil {
			if wait := time.Until(c.retryAt); wait > 0 {
				lastErr := c.lastErr
				c.mu.Unlock()
				if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
					return nil, fmt.Errorf("%w: %w (next attempt in %s)", ErrUnavailable, lastErr, wait.Round(time.Millisecond))
				}
				t := time.NewTimer(wait)
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
					return nil, fmt.Errorf("%w: %w", ErrUnavailable, context.Cause(ctx))
				}
				continue
			}
			ch := make(chan struct{})
			c.dialing = ch
			c.pool.wg.Go(func() { c.dial(ch, ctx) })
		}
		ch := c.dialing
		c.mu.Unlock()

		select {
		case <-ch:
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: still connecting: %w", ErrUnavailable, context.Cause(ctx))
		}
		c.mu.Lock()
		s, err, closed := c.sess, c.lastErr, c.closed
		c.mu.Unlock()
		switch {
		case closed:
			return nil, ErrClosed
		case s != nil:
			return s, nil
		}
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
}

// connectTimeout bounds one attempt to reach the upstream.
func (c *conn) connectTimeout() time.Duration {
	if c.cfg.ConnectTimeout > 0 {
		return c.cfg.ConnectTimeout
	}
	return c.pool.opts.ConnectTimeout
}

// UpOnly makes Import and ImportedPrompts under ctx read the upstreams
// that are up, connecting none: for a revision built while the upstreams
// connect in the background (Connect), whose outcome rebuilds it
// (Options.ToolsChanged).
func UpOnly(ctx context.Context) context.Context { return context.WithValue(ctx, upOnlyKey{}, true) }

type upOnlyKey struct{}

func upOnly(ctx context.Context) bool { v, _ := ctx.Value(upOnlyKey{}).(bool); return v }

// errNotUp is why an upstream contributes nothing under UpOnly.
var errNotUp = errors.New("not connected (yet)")

// ErrConnectTimeout is the cause of an attempt to reach an upstream that
// outlived its connect timeout.
var ErrConnectTimeout = errors.New("upstream: no answer to initialize in time")

// dial opens a session in the background and publishes the outcome; a
// failure schedules a reconnect in the background (reconnectLater).
func (c *conn) dial(ch chan struct{}, caller context.Context) {
	wait := c.connectTimeout()
	ctx, cancel := context.WithTimeoutCause(CallerContext(c.pool.ctx, caller), wait, ErrConnectTimeout)
	defer cancel()
	s, listing, err := c.open(ctx)
	if err != nil {
		err = c.connectError(ctx, err, wait)
	}

	c.mu.Lock()
	c.dialing = nil
	if err == nil && c.closed {
		c.mu.Unlock()
		close(ch)
		c.closeSession(s)
		return
	}
	changed := false
	if err != nil {
		c.failures++
		c.lastErr = err
		c.retryAt = time.Now().Add(backoff.Exponential(backoffMin, backoffMax, c.failures))
	} else {
		c.sess, c.failures, c.lastErr, c.retryAt = s, 0, nil, time.Time{}
		if listing.tools != nil {
			changed = c.setToolsLocked(listing)
		}
	}
	failures := c.failures
	c.mu.Unlock()
	close(ch)

	if err != nil {
		if c.pool.ctx.Err() != nil {
			return // closing: not a failure of the upstream
		}
		next := c.reconnectLater(failures)
		c.pool.log.Error("upstream: not reachable", slog.String("upstream", c.cfg.Name), slog.Any("error", err),
			slog.Int("attempt", failures), slog.Duration("retry_in", next))
		return
	}
	c.pool.log.Info("upstream: connected", slog.String("upstream", c.cfg.Name), slog.Int("tools", len(listing.tools)))
	if changed && c.pool.opts.ToolsChanged != nil {
		c.pool.opts.ToolsChanged(c.cfg.Name)
	}
}

// connectError says why an attempt to reach the upstream failed: what
// toolgate waited for, how long, the setting that bounds it and what to
// look at.
func (c *conn) connectError(ctx context.Context, err error, wait time.Duration) error {
	if !errors.Is(context.Cause(ctx), ErrConnectTimeout) {
		return fmt.Errorf("%w%s", err, c.hint(false))
	}
	return fmt.Errorf("%w: waited %s for the upstream's answer to initialize; raise its timeout setting (timeout: in its upstreams entry) to wait longer%s",
		ErrConnectTimeout, wait, c.hint(true))
}

// hint is what to look at when an upstream cannot be reached.
func (c *conn) hint(timedOut bool) string {
	switch {
	case c.cfg.Transport != nil:
		return ""
	case c.cfg.URL != "":
		return " (is an MCP server answering streamable HTTP at its url?)" // the url itself may hold secrets
	}
	prog := filepath.Base(c.cfg.Command[0])
	switch {
	case timedOut && slices.Contains([]string{"npx", "uvx", "uv", "pipx", "bunx", "pnpm", "docker", "podman"}, prog):
		return " (" + prog + " may still be downloading the server: its first run fetches the package, which can take minutes; run the command once by hand to warm its cache)"
	case timedOut:
		return " (the command started but did not answer initialize on stdout: run it by hand to see whether it is an MCP server over stdio)"
	}
	return " (run the command by hand to see why it does not start)"
}

// reconnectLater dials again after a backoff (1s, 2s, ... a minute)
// without waiting for a call, unless one dials first; it returns the
// wait. Upstreams whose sessions are per caller are reached by their
// callers only.
func (c *conn) reconnectLater(failures int) time.Duration {
	wait := backoff.Exponential(reconnectMin, reconnectMax, failures)
	if c.creds.perCaller() {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.reconnecting {
		return wait
	}
	c.reconnecting = true
	// Under c.mu with c.closed false: Close has not reached wg.Wait.
	c.pool.wg.Go(func() {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-t.C:
		case <-c.pool.ctx.Done():
		}
		c.mu.Lock()
		c.reconnecting = false
		c.mu.Unlock()
		if c.pool.ctx.Err() != nil {
			return
		}
		_, _ = c.session(c.pool.ctx) // a failure schedules the next attempt
	})
	return wait
}

// open starts the transport, opens the session (handshake.go) and lists
// the tools (a failed listing leaves its tools nil but the session usable).
func (c *conn) open(ctx context.Context) (*session, toolListing, error) {
	cs, cmd, err := c.connectClient(ctx, c.newClient(), func() (mcp.Transport, *exec.Cmd, error) { return c.sessionTransport(SessionFor{}, nil) }, "")
	if err != nil {
		return nil, toolListing{}, fmt.Errorf("connect: %w", err)
	}
	s := &session{cs: cs, cmd: cmd, done: make(chan struct{})}
	c.pool.wg.Go(func() {
		_ = cs.Wait()
		close(s.done)
	})
	listing, err := listTools(ctx, cs)
	if err != nil {
		c.pool.log.Warn("upstream: tools/list failed; arguments are not checked against it",
			slog.String("upstream", c.cfg.Name), slog.Any("error", err))
		listing = toolListing{}
	}
	return s, listing, nil
}

// toolListing is one whole tools/list of an upstream: its tools, decoded,
// in the upstream's order, and their definitions as the upstream sent
// them, by name. The SDK's Tool loses what it does not hold (execution,
// members of later revisions) and writes what the upstream left out
// (idempotentHint false): a listing served as the upstream lists it
// (docs/contract.md §19) reads defs. A tool whose definition could not be
// read apart has none there.
type toolListing struct {
	tools []*mcp.Tool
	defs  map[string]json.RawMessage
}

// listTools lists cs's tools, page after page.
func listTools(ctx context.Context, cs *mcp.ClientSession) (toolListing, error) {
	out := toolListing{tools: []*mcp.Tool{}, defs: map[string]json.RawMessage{}}
	params := &mcp.ListToolsParams{}
	for {
		sentCtx, sent := withSent(ctx)
		res, err := cs.ListTools(sentCtx, params)
		if err != nil {
			return toolListing{}, err
		}
		var raw struct {
			Tools []json.RawMessage `json:"tools"`
		}
		if r := sent.raw.Load(); r != nil && json.Unmarshal(*r, &raw) == nil && len(raw.Tools) == len(res.Tools) {
			for i, t := range res.Tools {
				if t != nil {
					out.defs[t.Name] = raw.Tools[i]
				}
			}
		}
		out.tools = append(out.tools, res.Tools...)
		if res.NextCursor == "" {
			return out, nil
		}
		params = &mcp.ListToolsParams{Cursor: res.NextCursor}
	}
}

// setToolsLocked caches a listing; it reports whether it differs from the
// last one (as decoded, or as sent).
func (c *conn) setToolsLocked(l toolListing) bool {
	old, _ := json.Marshal(c.tools)
	cur, _ := json.Marshal(l.tools)
	changed := c.tools == nil || string(old) != string(cur) || !maps.EqualFunc(c.defs, l.defs, func(a, b json.RawMessage) bool { return bytes.Equal(a, b) })
	c.tools, c.defs = l.tools, l.defs
	c.byName = make(map[string]*mcp.Tool, len(l.tools))
	for _, t := range l.tools {
		c.byName[t.Name] = t
	}
	return changed
}

// tool returns the upstream's last listed definition of name; nil when the
// upstream was never listed or does not list it.
func (c *conn) tool(name string) (t *mcp.Tool, listed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byName[name], c.tools != nil
}

// listed returns the upstream's tools, connecting (and listing again when
// the last listing failed) as needed.
func (c *conn) listed(ctx context.Context) (toolListing, error) {
	ctx, cancel := c.requestContext(ctx)
	defer cancel()
	s, err := c.session(ctx)
	if err != nil {
		return toolListing{}, err
	}
	c.mu.Lock()
	l := toolListing{tools: c.tools, defs: c.defs}
	c.mu.Unlock()
	if l.tools != nil {
		return l, nil
	}
	l, err = listTools(ctx, s.cs)
	if err != nil {
		c.failed(ctx, s, err)
		return toolListing{}, fmt.Errorf("tools/list: %w", err)
	}
	c.mu.Lock()
	changed := c.setToolsLocked(l)
	c.mu.Unlock()
	if changed && c.pool.opts.ToolsChanged != nil {
		c.pool.wg.Go(func() { c.pool.opts.ToolsChanged(c.cfg.Name) })
	}
	return l, nil
}

// requestContext bounds one request to the upstream: its Timeout (cause
// ErrTimeout), and Pool.Close (cause ErrClosed), so that closing never
// waits for calls in flight.
func (c *conn) requestContext(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancelTimeout := context.WithTimeoutCause(ctx, c.cfg.Timeout, ErrTimeout)
	ctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(c.pool.ctx, func() { cancel(ErrClosed) })
	return ctx, func() {
		stop()
		cancel(nil)
		cancelTimeout()
	}
}

// call runs one tools/call on the upstream, bounded by its Timeout.
func (c *conn) call(ctx context.Context, tool string, args any) (*mcp.CallToolResult, error) {
	ctx, cancel := c.requestContext(ctx)
	defer cancel()
	s, err := c.session(ctx)
	if err != nil {
		return nil, fmt.Errorf("upstream %s: %w", c.cfg.Name, err)
	}
	sentCtx, sent := withSent(ctx)
	res, err := s.cs.CallTool(sentCtx, &mcp.CallToolParams{Name: tool, Arguments: args, Meta: traceMeta(ctx)})
	if err == nil {
		sent.keep(ctx, res)
	}
	if err == nil && res == nil {
		err = errors.New("no result")
	}
	if err != nil {
		c.failed(ctx, s, err)
		if cause := context.Cause(ctx); ctx.Err() != nil && cause != nil {
			err = fmt.Errorf("%w (%w)", cause, err)
		}
		return nil, fmt.Errorf("upstream %s: tools/call %s: %w", c.cfg.Name, tool, err)
	}
	return res, nil
}

// failed decides what a failed request says about the session: a JSON-RPC
// error is the upstream's answer (the session is fine); a time-out may be a
// slow tool or a wedged upstream, so the session is probed in the
// background; anything else is a broken transport: the session is dropped
// and the next call reconnects.
func (c *conn) failed(ctx context.Context, s *session, err error) {
	var rpcErr *jsonrpc.Error
	switch {
	case errors.As(err, &rpcErr), errors.Is(err, ErrCredentials): // not sent: the session is fine
	case ctx.Err() != nil && s.alive():
		if errors.Is(context.Cause(ctx), ErrTimeout) {
			c.probe(s)
		}
	default:
		c.mu.Lock()
		c.dropLocked(s, err)
		c.mu.Unlock()
	}
}

// probe pings a session whose call timed out; one that does not answer is
// dropped.
func (c *conn) probe(s *session) {
	if !s.probing.CompareAndSwap(false, true) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.sess != s {
		return
	}
	c.pool.wg.Go(func() {
		defer s.probing.Store(false)
		ctx, cancel := context.WithTimeout(c.pool.ctx, min(c.cfg.Timeout, 5*time.Second))
		defer cancel()
		err := s.cs.Ping(ctx, nil)
		var rpcErr *jsonrpc.Error
		if err != nil && !errors.As(err, &rpcErr) {
			c.mu.Lock()
			c.dropLocked(s, fmt.Errorf("no answer to ping after a time-out: %w", err))
			c.mu.Unlock()
		}
	})
}

// dropLocked forgets s if it is the current session and closes it in the
// background; the next call reconnects at once. c.mu is held.
func (c *conn) dropLocked(s *session, why error) {
	if c.sess != s || c.closed {
		return
	}
	c.sess = nil
	c.lastErr = why
	c.failures = 0
	c.retryAt = time.Time{}
	c.pool.log.Warn("upstream: session lost; reconnecting on the next call",
		slog.String("upstream", c.cfg.Name), slog.Any("error", why))
	c.pool.wg.Go(func() { c.closeSession(s) })
}

// shutdown closes the upstream for good (Pool.Close).
func (c *conn) shutdown() {
	c.mu.Lock()
	c.closed = true
	s := c.sess
	c.sess = nil
	c.mu.Unlock()
	if s != nil {
		c.pool.wg.Go(func() { c.closeSession(s) })
	}
	c.shutdownRelay()
}

// closeSession ends s: the SDK closes stdin, waits TerminateGrace, sends
// SIGTERM, waits again, then SIGKILL. Should that still not return, the
// process is killed here.
func (c *conn) closeSession(s *session) {
	done := make(chan struct{})
	go func() {
		_ = s.cs.Close()
		close(done)
	}()
	limit := 3*c.pool.opts.TerminateGrace + time.Second
	select {
	case <-done:
		return
	case <-time.After(limit):
	}
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
	}
	select {
	case <-done:
	case <-time.After(limit):
		c.pool.log.Error("upstream: session did not close", slog.String("upstream", c.cfg.Name))
	}
}
