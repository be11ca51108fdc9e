// Package watch reloads an engine whenever its registry, policies or data
// change on disk (docs/contract.md §9): the file watching and the
// debounce live here, so that package engine holds decisions only (it
// compiles and evaluates, and reloads when asked).
package watch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/internal/runtime/fswatch"
)

// DefaultDebounce is how long Run waits for a burst of file events to end
// before it reloads.
const DefaultDebounce = 100 * time.Millisecond

// ErrNotWatchable is returned by Run for a Source read from an fs.FS: only
// files of the operating system can be watched.
var ErrNotWatchable = errors.New("engine: a source on an fs.FS cannot be watched")

// Options configures Run. The zero value is ready to use.
type Options struct {
	// Debounce is how long the file events of one burst are collected before
	// a reload (default DefaultDebounce). A burst that does not end still
	// reloads after four times Debounce.
	Debounce time.Duration
	// Settle is the settle window (docs/contract.md §9): a file of the serving revision
	// that is missing is believed gone only after it has been missing this
	// long, and a file that changed is loaded only once its size and
	// modification time have stayed the same this long; until then no
	// revision without it, or with a version of it still being written, is
	// built or served. Zero or negative: the engine's (WithSettle, default
	// DefaultSettle).
	Settle time.Duration
	// OnReload, if set, is called after every swap to a new revision while
	// Run runs, also for swaps made by a host's own Reload. Calls come one
	// at a time, in the order of the swaps, from the goroutine that
	// reloaded; they must not call Reload.
	OnReload func(old, new *engine.Revision)
	// OnError, if set, is called with the error of every failed reload
	// while Run runs (the log has each distinct error once). The same
	// rules as for OnReload apply.
	OnError func(error)
}

func (o Options) debounce() time.Duration {
	if o.Debounce > 0 {
		return o.Debounce
	}
	return DefaultDebounce
}

// Run reloads e whenever its registry, policies or data change,
// until ctx is done; it then returns nil. It fails at once when the source
// cannot be watched (ErrNotWatchable, or the file system refuses watches).
//
// Watch watches directories, never single files, so that editors' atomic
// saves (rename over), delete and re-create, and a Kubernetes ConfigMap's
// "..data" symlink swap are all seen: the directory holding the registry,
// and the policy directory recursively (sub-directories are added as they
// appear, symlinked directories through their targets, and the directories
// holding the targets of symlinked files). Bursts of events are debounced;
// each reload is one Reload attempt, so a change that fails keeps the last
// good revision serving and is logged and reported (LastError, Status).
// A changed file is loaded once it has stopped changing for the settle
// window, so an edit takes effect after about Debounce + Settle, and a
// file rewritten more often than that takes effect once the writes stop.
//
// Changes made before Run has set up its watches are not missed: it tries
// a reload once after setting them up, which compiles nothing when the
// files are byte for byte those the serving revision was built from. A host may call Reload itself at any
// time, with or without Run.
func Run(ctx context.Context, e *engine.Engine, opts Options) error {
	src := e.Source()
	regFS, polFS := src.RegistryFS, src.PolicyFS
	if regFS == nil {
		regFS = src.FS
	}
	if polFS == nil {
		polFS = src.FS
	}
	if regFS != nil && polFS != nil {
		return ErrNotWatchable
	}
	var reg, pol string
	if regFS == nil {
		reg = src.Registry
	}
	if polFS == nil {
		pol = src.Policies
	}
	w, err := fswatch.New(reg, pol, e.Logger())
	if err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	defer w.Close()
	if err := w.Sync(); err != nil {
		return err
	}
	defer e.Subscribe(opts.OnReload, opts.OnError)()

	debounce := opts.debounce()
	maxWait := 4 * debounce

	// One timer: the next attempt is due at the end of a burst's debounce,
	// or at the end of a settle window, whichever comes first.
	timer := time.NewTimer(0) // the first attempt catches up with changes made before the watches
	defer timer.Stop()
	var burst, due time.Time // burst: start of the burst being collected
	schedule := func(at time.Time) {
		if due.IsZero() || at.Before(due) {
			due = at
			timer.Reset(max(time.Until(at), 0))
		}
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events():
			if !ok {
				return nil
			}
			if !w.Relevant(ev) {
				continue
			}
			now := time.Now()
			if burst.IsZero() {
				burst = now
			}
			// Quiet period: each event pushes the attempt back, up to maxWait.
			at := now.Add(debounce)
			if limit := burst.Add(maxWait); limit.Before(at) {
				at = limit
			}
			due = at
			timer.Reset(max(time.Until(at), 0))
		case err, ok := <-w.Errors():
			if !ok {
				return nil
			}
			w.Warn("toolgate: file watch error", err)
			if fswatch.Overflow(err) {
				// Events were lost: look at everything again.
				schedule(time.Now().Add(debounce))
			}
		case <-timer.C:
			burst, due = time.Time{}, time.Time{}
			if err := w.Sync(); err != nil {
				w.Warn("toolgate: file watch error", err)
			}
			_, wait, _ := e.ReloadAttempt(ctx, opts.Settle) // reported to the log and the listeners
			if wait > 0 {
				schedule(time.Now().Add(wait))
			}
		}
	}
}
