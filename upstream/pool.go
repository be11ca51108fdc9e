package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/methods"
	"github.com/toolgate/toolgate/registry"
)

// MethodPrefix starts a row's method that names an upstream tool:
// upstream:SERVER/TOOL.
const MethodPrefix = registry.UpstreamPrefix

// Defaults of Options.
const (
	// DefaultConnectTimeout bounds an upstream's start and handshake
	// (Config.ConnectTimeout, the settings' timeout): long enough for
	// `npx -y` or `uvx` to download a server on its first run.
	DefaultConnectTimeout = 2 * time.Minute
	DefaultTerminateGrace = 2 * time.Second
)

// Reconnect backoff after consecutive failed connection attempts: the first
// attempt after a session broke is immediate, then 100ms, 200ms, ... 5s.
const (
	backoffMin = 100 * time.Millisecond
	backoffMax = 5 * time.Second
)

// Background reconnects of an upstream that could not be reached, without
// waiting for a call: after 1s, 2s, 4s, ... at most a minute apart. Each
// attempt is bounded by the upstream's connect timeout, never less: a
// process still starting is not killed to start another.
const (
	reconnectMin = time.Second
	reconnectMax = time.Minute
)

var (
	// ErrUnavailable wraps the failure of an upstream that could not be
	// reached (it failed to start or connect, and is backing off).
	ErrUnavailable = errors.New("upstream: unavailable")
	// ErrClosed is returned for calls after Pool.Close.
	ErrClosed = errors.New("upstream: pool closed")
)

// Options configure a Pool; the zero value is usable.
type Options struct {
	// Logger receives connection failures and import findings; nil
	// discards them.
	Logger *slog.Logger
	// Stderr receives the stderr of stdio upstreams; nil discards it.
	Stderr io.Writer
	// ConnectTimeout bounds one connection attempt (start, handshake,
	// tools/list) of an upstream whose Config.ConnectTimeout is zero,
	// independently of the calls waiting for it; zero is
	// DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// TerminateGrace is how long closing a stdio upstream waits for it to
	// exit after its stdin is closed, before SIGTERM and then SIGKILL; zero
	// is DefaultTerminateGrace.
	TerminateGrace time.Duration
	// ToolsChanged, when set, is called (on its own goroutine) after a
	// connection to server listed tools different from the last listing,
	// for instance when an upstream that was down at start comes up, or
	// after an importing upstream's notifications/tools/list_changed led
	// to a listing that differs: the place to rebuild a revision with
	// ImportedRows (or Import).
	ToolsChanged func(server string)
	// Pins is the pins file of the upstreams configured with Pin (docs/contract.md
	// §15); required when one is.
	Pins string
	// MaxCallerSessions bounds the caller sessions (docs/relay.md) open at
	// once to one upstream, idle or in use; zero is
	// DefaultMaxCallerSessions. A call past it fails.
	MaxCallerSessions int
	// MaxCallerSessionsPerCaller is each caller's share of them (by
	// identity key, Peer.Owner: identity source and subject); zero is a
	// quarter of MaxCallerSessions (at least 1). A caller's call past its
	// share fails as one past MaxCallerSessions does, whatever room the
	// others leave: one caller never holds every session.
	MaxCallerSessionsPerCaller int
	// MaxIdleCallerSessions bounds those kept idle, per upstream (the
	// least recently used is closed past it); zero is MaxCallerSessions
	// for an HTTP upstream (an idle session there is a client session of
	// a few KiB; the connections are the upstream's transport's) and
	// DefaultMaxIdleCallerSessions for the others (an idle stdio session
	// is a process).
	MaxIdleCallerSessions int
	// CallerIdleTimeout closes a caller session idle that long; zero is
	// DefaultCallerIdleTimeout.
	CallerIdleTimeout time.Duration
	// OnDrift, when set, is called once for each definition of a pinned
	// upstream's tool seen not matching its pin (drifted, or new): the
	// place to count it. The warning is logged either way.
	OnDrift func(server, tool string)
	// LookupEnv resolves the ${VAR} of upstreams' headers, env and auth
	// (docs/contract.md §17); nil is os.LookupEnv.
	LookupEnv func(string) (string, bool)
}

// Pool holds one MCP client session per upstream server and resolves rows'
// `upstream:SERVER/TOOL` methods to its tools (it is an
// [methods.Set]).
//
// Sessions are opened on first use (or by Connect) and re-opened on the
// next call after one broke. Every call is bounded by its upstream's
// Timeout: an upstream that is down or hangs fails its calls with an error,
// never blocks them, and never affects the other upstreams. A Pool is safe
// for concurrent use; Close ends every session and child process.
type Pool struct {
	opts   Options
	log    *slog.Logger
	conns  map[string]*conn
	order  []string // upstream names, configuration order
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // background dials, probes, re-listings and closes
	once   sync.Once

	driftMu sync.Mutex
	drift   map[string]map[string]string // pinned upstream → tool not served → the definition's hash last seen

	cat catalog // prompts and resources of importing upstreams (catalog.go)
}

// NewPool returns a Pool for the upstreams; it connects nothing yet. A
// configuration error (a bad name, a duplicate name, neither or both of
// Command and URL) is an error wrapping ErrConfig. opts may be nil.
func NewPool(cfgs []Config, opts *Options) (*Pool, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.TerminateGrace <= 0 {
		o.TerminateGrace = DefaultTerminateGrace
	}
	if o.Stderr == nil {
		o.Stderr = io.Discard
	}
	if o.MaxCallerSessions <= 0 {
		o.MaxCallerSessions = DefaultMaxCallerSessions
	}
	if o.MaxCallerSessionsPerCaller <= 0 {
		o.MaxCallerSessionsPerCaller = max(1, o.MaxCallerSessions/callerShareDen)
	}
	if o.CallerIdleTimeout <= 0 {
		o.CallerIdleTimeout = DefaultCallerIdleTimeout
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Pool{opts: o, log: log, conns: make(map[string]*conn, len(cfgs))}
	var errs []error
	for _, cfg := range cfgs {
		if err := cfg.validate(); err != nil {
			errs = append(errs, err)
			continue
		}
		if _, dup := p.conns[cfg.Name]; dup {
			errs = append(errs, fmt.Errorf("%w: upstream %s configured twice", ErrConfig, cfg.Name))
			continue
		}
		if cfg.Timeout == 0 {
			cfg.Timeout = DefaultTimeout
		}
		cfg.Command = append([]string(nil), cfg.Command...)
		cfg.Env = append([]string(nil), cfg.Env...)
		creds, err := newCredentials(&cfg, o.LookupEnv) // secrets resolved at start (credentials.go)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		creds.keepIdle(o.MaxCallerSessions)
		maxIdle := o.MaxIdleCallerSessions
		switch {
		case maxIdle > 0:
		case cfg.URL != "":
			maxIdle = o.MaxCallerSessions
		default:
			maxIdle = DefaultMaxIdleCallerSessions
		}
		p.conns[cfg.Name] = &conn{cfg: cfg, pool: p, creds: creds, maxIdle: maxIdle}
		p.order = append(p.order, cfg.Name)
	}
	for _, name := range p.order {
		if p.conns[name].cfg.Pin && o.Pins == "" {
			errs = append(errs, fmt.Errorf("%w: upstream %s: pin needs a pins file (Options.Pins)", ErrConfig, name))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	return p, nil
}

// Connect opens a session to every upstream that has none, concurrently,
// and waits until each is up, has failed, or ctx is done. It returns every
// failure joined; a failed upstream is retried on its next call, so a
// server may log the error and serve on.
func (p *Pool) Connect(ctx context.Context) error {
	errs := make([]error, len(p.order))
	var wg sync.WaitGroup
	for i, name := range p.order {
		c := p.conns[name]
		if c.creds.perCaller() {
			continue // token exchange: connected on behalf of its first caller
		}
		wg.Go(func() {
			if _, err := c.session(ctx); err != nil {
				errs[i] = fmt.Errorf("upstream %s: %w", name, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Close ends every session, terminates every stdio upstream (stdin closed,
// then SIGTERM and SIGKILL after TerminateGrace each) and waits for the
// pool's goroutines. Calls after Close fail with ErrClosed. Close is
// idempotent.
func (p *Pool) Close() error {
	p.once.Do(func() {
		p.cancel()
		for _, c := range p.conns {
			c.shutdown()
		}
	})
	p.wg.Wait()
	for _, c := range p.conns {
		c.creds.closeIdle()
	}
	return nil
}

// Names returns the configured upstream names, in configuration order.
func (p *Pool) Names() []string { return append([]string(nil), p.order...) }

// ParseMethod splits a row's method `upstream:SERVER/TOOL`; ok is false for
// any other method.
func ParseMethod(method string) (server, tool string, ok bool) {
	return registry.ParseUpstreamMethod(method)
}

// Method implements [methods.Set]: `upstream:SERVER/TOOL` for a
// configured SERVER resolves, whether or not the upstream is up or lists
// TOOL (a call to a tool it lacks fails inside the tool).
func (p *Pool) Method(name string) (methods.Method, bool) {
	server, tool, ok := ParseMethod(name)
	if !ok {
		return nil, false
	}
	c, ok := p.conns[server]
	if !ok {
		return nil, false
	}
	return &method{conn: c, tool: tool}, true
}

// Chain returns a Set that resolves a name with the first of sets
// that has it; nil sets are skipped.
func Chain(sets ...methods.Set) methods.Set {
	return chain(sets)
}

type chain []methods.Set

func (ch chain) Method(name string) (methods.Method, bool) {
	for _, s := range ch {
		if s == nil {
			continue
		}
		if m, ok := s.Method(name); ok {
			return m, true
		}
	}
	return nil, false
}

// newClient is the MCP client the upstream's sessions are opened with. An
// importing upstream's notifications/tools/list_changed make it list its
// tools again (relist).
func (c *conn) newClient() *mcp.Client {
	opts := &mcp.ClientOptions{
		// No roots, sampling or elicitation: the shared session lists and
		// imports; calls made for a client run on its caller's sessions
		// (relay.go).
		Capabilities: &mcp.ClientCapabilities{},
		// An input-required result (2026-07-28) to a prompts/get or a
		// resources/read made for a client goes to that client as it is,
		// and the client's answers come back with its retry: the shared
		// session has nobody to ask.
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
	}
	if c.cfg.Import {
		opts.ToolListChangedHandler = func(context.Context, *mcp.ToolListChangedRequest) { c.toolListChanged() }
		c.catalogHandlers(opts)
	}
	return mcp.NewClient(clientInfo, opts)
}
