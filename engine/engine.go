package engine

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultTimeout is the default deadline of one policy evaluation.
const DefaultTimeout = 250 * time.Millisecond

type options struct {
	timeout time.Duration
	logger  *slog.Logger
}

// Option configures an Engine.
type Option func(*options)

// WithTimeout sets the deadline of one policy evaluation; an evaluation past
// it fails (SPEC §4). Zero or negative keeps DefaultTimeout.
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

// Engine holds the current Revision of a Source and replaces it on Reload.
// Its methods are safe for concurrent use. Read Current once per decision
// and use that Revision throughout.
type Engine struct {
	src  Source
	opts options
	cur  atomic.Pointer[Revision]

	mu      sync.Mutex // serialises Reload
	next    uint64
	lastErr error
}

// New loads src into its first revision. It fails when the registry or the
// policies do not load; nothing is served half.
func New(ctx context.Context, src Source, opts ...Option) (*Engine, error) {
	e := &Engine{src: src, opts: options{timeout: DefaultTimeout}}
	for _, o := range opts {
		o(&e.opts)
	}
	rev, err := build(ctx, src, 1, &e.opts)
	if err != nil {
		return nil, err
	}
	e.next = 2
	e.cur.Store(rev)
	return e, nil
}

// Current returns the revision serving now.
func (e *Engine) Current() *Revision { return e.cur.Load() }

// Source returns what the engine loads from.
func (e *Engine) Source() Source { return e.src }

// Reload builds a whole new revision from the source and, when it loads,
// swaps it in. On failure the current revision keeps serving, and the error
// is returned and kept (see LastError) until a reload succeeds. It reports
// whether a new revision was installed (false when the content hash did not
// change).
func (e *Engine) Reload(ctx context.Context) (bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	rev, err := build(ctx, e.src, e.next, &e.opts)
	if err != nil {
		e.lastErr = err
		return false, err
	}
	e.lastErr = nil
	if cur := e.cur.Load(); cur != nil && cur.hash == rev.hash {
		return false, nil
	}
	e.next++
	e.cur.Store(rev)
	return true, nil
}

// LastError is the error of the last reload, nil when it succeeded.
func (e *Engine) LastError() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.lastErr
}
