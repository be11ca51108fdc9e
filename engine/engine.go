package engine

import (
	"context"

	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolgate/toolgate/registry"
)

// DefaultTimeout is the default deadline of one policy evaluation.
const DefaultTimeout = 250 * time.Millisecond

// DefaultSettle is the default settle window (docs/contract.md §9): how long a file of
// the serving revision may be missing before its disappearance is believed.
const DefaultSettle = 200 * time.Millisecond

type options struct {
	timeout time.Duration
	logger  *slog.Logger
	settle  time.Duration
	rows    RegistryHook
	now     func() time.Time // the clock of the settle window
	caps    *Capabilities    // nil: DefaultCapabilities
	// noDecisionCache switches the per-caller grant decision cache off.
	noDecisionCache bool
}

// WithDecisionCache switches the grant decision cache on or off (default
// on). With it on, a revision whose policy provably decides granted from
// the caller alone (see Revision.DecisionMode) memoises each caller's
// GrantDecision; answers are the same either way, only their cost differs.
func WithDecisionCache(on bool) Option { return func(o *options) { o.noDecisionCache = !on } }

// RegistryHook derives the registry a revision serves from the registry
// file's, for example by adding rows imported from upstream MCP servers. It
// must not modify its argument; it runs on every build of a revision.
type RegistryHook func(ctx context.Context, reg *registry.Registry) (*registry.Registry, error)

// WithRegistryHook sets a RegistryHook. The rows it returns are part of the
// revision, and of its hash.
func WithRegistryHook(h RegistryHook) Option { return func(o *options) { o.rows = h } }

// Option configures an Engine.
type Option func(*options)

// WithTimeout sets the deadline of one policy evaluation; an evaluation past
// it fails (docs/contract.md §4). Zero or negative keeps DefaultTimeout.
func WithTimeout(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.timeout = d
		}
	}
}

// WithLogger sets the logger for policy print statements and reload
// reports. Nil discards them.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithSettle sets the settle window that Reload honours (docs/contract.md §9); a watch
// (package watch) uses it unless watch.Options.Settle is set. Zero or negative keeps
// DefaultSettle: the window cannot be switched off.
func WithSettle(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.settle = d
		}
	}
}

// Engine holds the current Revision of a Source and replaces it on Reload.
// Its methods are safe for concurrent use. Read Current once per decision
// and use that Revision throughout.
type Engine struct {
	src  Source
	opts options
	cur  atomic.Pointer[Revision]

	// reloadMu serialises reloads, and with them the listeners' calls, so
	// that they see swaps in order.
	reloadMu sync.Mutex
	next     uint64
	gone     map[string]time.Time // files of the current revision seen missing, and since when
	// seen is every file's version as last observed, and since when it
	// has been observed unchanged; the zero time for the versions the
	// first revision read (docs/contract.md §9: a file is loaded once it is stable).
	seen map[string]observed
	// builds and attempts count the revisions reload built and the
	// reloads it attempted, for tests (export_test.go).
	builds, attempts uint64

	mu        sync.Mutex // guards the fields below, and the swap of cur
	lastErr   error
	lastErrAt time.Time
	loggedErr string // the last error logged, so that each is logged once
	reloads   uint64
	failures  uint64
	listeners []*listener
}

// New loads src into its first revision. It fails when the registry or the
// policies do not load; nothing is served half.
func New(ctx context.Context, src Source, opts ...Option) (*Engine, error) {
	e := &Engine{src: src, opts: options{timeout: DefaultTimeout, settle: DefaultSettle, now: time.Now}}
	for _, o := range opts {
		o(&e.opts)
	}
	rev, err := build(ctx, src, 1, &e.opts)
	if err != nil {
		return nil, err
	}
	e.next = 2
	e.cur.Store(rev)
	e.seen = make(map[string]observed, len(rev.stamps))
	for name, st := range rev.stamps {
		e.seen[name] = observed{stamp: st}
	}
	return e, nil
}

// Current returns the revision serving now.
func (e *Engine) Current() *Revision { return e.cur.Load() }

// Source returns what the engine loads from.
// A ReloadFrom replaces it.
func (e *Engine) Source() Source {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.src
}

// Reload builds a whole new revision from the source and, when it loads,
// swaps it in. On failure the current revision keeps serving, and the error
// is returned and kept (see LastError) until a reload succeeds. It reports
// whether a new revision was installed (false when the content hash did not
// change).
//
// A file of the current revision that is missing is not believed gone at
// once, and a file is loaded only once it has stopped changing (docs/contract.md §9):
// Reload then waits until the file is back, or has been missing, or has
// kept its size and modification time, for the settle window (WithSettle),
// so it may block that long.
// It returns ctx.Err() when ctx ends first.
//
// Reload may be called while a watch runs (package watch); its swaps and
// failures reach the watch's OnReload and OnError too.
func (e *Engine) Reload(ctx context.Context) (bool, error) {
	for {
		changed, wait, err := e.reload(ctx, e.opts.settle)
		if wait <= 0 {
			return changed, err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return false, ctx.Err()
		case <-t.C:
		}
	}
}

// LastError is the error of the last reload, nil when it succeeded.
func (e *Engine) LastError() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.lastErr
}
