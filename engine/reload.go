package engine

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"
)

// Status is what /healthz reports about an Engine: the revision serving and
// the health of reloading.
type Status struct {
	// Revision, Hash and LoadedAt describe the revision serving now.
	Revision uint64    `json:"revision"`
	Hash     string    `json:"hash"`
	LoadedAt time.Time `json:"loaded_at"`
	// Label is the serving revision's Label (an OPA bundle's manifest
	// revision), empty when its source names none.
	Label string `json:"label,omitempty"`
	// LastError is the error of the last reload, empty when it succeeded;
	// LastErrorAt is when it happened.
	LastError   string    `json:"last_error,omitempty"`
	LastErrorAt time.Time `json:"last_error_at,omitzero"`
	// Reloads counts the revisions installed after the first; a reload that
	// finds the content unchanged installs none. ReloadFailures counts the
	// reloads that failed.
	Reloads        uint64 `json:"reloads"`
	ReloadFailures uint64 `json:"reload_failures"`
}

// Status returns the engine's status; it is consistent with itself (the
// revision and the counters are read together).
func (e *Engine) Status() Status {
	e.mu.Lock()
	defer e.mu.Unlock()
	cur := e.cur.Load()
	s := Status{
		Revision:       cur.number,
		Hash:           cur.hash,
		LoadedAt:       cur.loadedAt,
		Label:          cur.label,
		Reloads:        e.reloads,
		ReloadFailures: e.failures,
	}
	if e.lastErr != nil {
		s.LastError, s.LastErrorAt = e.lastErr.Error(), e.lastErrAt
	}
	return s
}

// listener receives the swaps and failures of every reload (Listen, Subscribe).
type listener struct {
	onReload func(old, new *Revision)
	onError  func(error)
}

func (e *Engine) addListener(l *listener) (remove func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.listeners = append(e.listeners, l)
	return func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.listeners = slices.DeleteFunc(e.listeners, func(x *listener) bool { return x == l })
	}
}

// reload is one attempt at a new revision. When a file of the current
// revision is missing and has not been missing for the settle window, or
// a file has changed within the settle window, it builds or swaps nothing
// and returns how long to wait before trying again.
//
// A file is stable once its stamp (size, modification time, identity) has
// been observed unchanged for the settle window, so a file written in
// place in chunks, with pauses longer than the watch's debounce, is not
// served half-written: a valid prefix (a lone package line) would drop an
// override. Stability is checked before building, on the stamps each file
// had as the build read it (one that changed while it was read is never
// stable), and again after a failed build (a file may have changed since
// the check and be why it failed).
//
// The disappearance is checked twice: before building (so that an editor's
// gap costs no compile and reports no error), and on the built revision
// (the file may vanish between the check and the walk). Only the second
// check is needed for the guarantee: a revision lacking a file of the
// current one is installed only once that file has been missing for settle.
func (e *Engine) reload(ctx context.Context, settle time.Duration) (changed bool, wait time.Duration, err error) {
	e.reloadMu.Lock()
	defer e.reloadMu.Unlock()
	defer func() { e.attempts++ }()
	cur := e.cur.Load()
	missing := func(f string) bool { return !e.src.exists(f) }
	if wait := e.settling(cur, settle, missing); wait > 0 {
		return false, wait, nil
	}
	if wait := e.changing(settle); wait > 0 {
		return false, wait, nil
	}
	if stamps, ok := e.unchanged(cur); ok {
		if wait := e.unstable(stamps, settle); wait > 0 {
			return false, wait, nil
		}
		e.gone = nil
		return e.install(cur, cur, nil), 0, nil // installs nothing; clears the last error
	}
	e.builds++
	rev, err := build(ctx, e.src, e.next, &e.opts)
	if err != nil {
		if ctx.Err() != nil {
			return false, 0, err // cancelled: not the source's failure
		}
		// A file that vanished or changed during the build may be why it failed.
		if wait := max(e.settling(cur, settle, missing), e.changing(settle)); wait > 0 {
			return false, wait, nil
		}
		e.failed(cur, err)
		return false, 0, err
	}
	have := make(map[string]bool, len(rev.files))
	for _, f := range rev.files {
		have[f] = true
	}
	if wait := e.settling(cur, settle, func(f string) bool { return !have[f] }); wait > 0 {
		return false, wait, nil
	}
	if wait := e.unstable(rev.stamps, settle); wait > 0 {
		return false, wait, nil
	}
	e.gone = nil
	return e.install(cur, rev, nil), 0, nil
}

// unchanged reports whether the files a build would read now are, byte
// for byte, those cur was built from, and returns their stamps: a build
// would then install nothing (install compares the hashes), so reload
// skips it. Reading and hashing the files is cheap; parsing and compiling
// them is not (a build allocates in proportion to the registry). With a
// RegistryHook the rows it derives are part of the hash and may change
// while the files do not (an upstream's tools): it reports false, and the
// build decides. So it does when a file cannot be read.
// The caller holds reloadMu.
func (e *Engine) unchanged(cur *Revision) (map[string]stamp, bool) {
	if e.opts.rows != nil {
		return nil, false
	}
	regFile, err := e.src.readRegistry()
	if err != nil {
		return nil, false
	}
	files, err := e.src.readPolicies()
	if err != nil || contentHash(regFile, nil, e.src.Revision, files) != cur.hash {
		return nil, false
	}
	stamps := make(map[string]stamp, len(files)+1)
	for _, f := range append(files, regFile) {
		stamps[f.Name] = f.Stamp
	}
	return stamps, true
}

// install swaps rev in for cur unless both have the same hash, clears the
// last error and tells the listeners; with src set, the engine's source
// becomes src in the same step. It reports whether rev was installed.
// The caller holds reloadMu.
func (e *Engine) install(cur, rev *Revision, src *Source) bool {
	e.mu.Lock()
	e.lastErr, e.loggedErr = nil, ""
	if src != nil {
		e.src = *src
	}
	if rev.hash == cur.hash {
		e.mu.Unlock()
		return false
	}
	e.next++
	e.cur.Store(rev)
	e.reloads++
	listeners := slices.Clone(e.listeners)
	e.mu.Unlock()

	if l := e.opts.logger; l != nil {
		l.Info("toolgate: reloaded", slog.String("from", cur.String()), slog.String("to", rev.String()), slog.Any("files", rev.files))
	}
	for _, l := range listeners {
		if l.onReload != nil {
			l.onReload(cur, rev)
		}
	}
	return true
}

// ReloadFrom builds a whole new revision from src and, when it loads,
// makes src the engine's source and swaps the revision in: the reload of
// docs/contract.md §9 for a source that is replaced whole rather than edited in place,
// such as an activated OPA bundle (docs/contract.md §14). Like Reload, a failure keeps
// the current revision and source serving, is kept as LastError and
// counted, and reaches the listeners' OnError; a success reaches their
// OnReload, and installs nothing when the content hash is unchanged (it
// reports false then). There is no settle window: src is read once, whole,
// so it should be a snapshot (an fs.FS in memory, for instance).
func (e *Engine) ReloadFrom(ctx context.Context, src Source) (bool, error) {
	e.reloadMu.Lock()
	defer e.reloadMu.Unlock()
	cur := e.cur.Load()
	rev, err := build(ctx, src, e.next, &e.opts)
	if err != nil {
		if ctx.Err() != nil {
			return false, err
		}
		if src.Revision != "" {
			err = fmt.Errorf("revision %q: %w", src.Revision, err) // which one was refused
		}
		e.failed(cur, err)
		return false, err
	}
	// The files of the old source are nobody's to settle any more.
	e.gone, e.seen = nil, make(map[string]observed, len(rev.stamps))
	for name, st := range rev.stamps {
		e.seen[name] = observed{stamp: st}
	}
	return e.install(cur, rev, &src), nil
}

// observed is a file's version as last seen, and since when it has been
// seen unchanged.
type observed struct {
	stamp stamp
	since time.Time
}

// changing stats every file a build would read and returns how long until
// the last of them has kept its stamp for settle; 0 when all are stable.
// When the files cannot be listed, the build reports why: 0.
func (e *Engine) changing(settle time.Duration) time.Duration {
	stamps, err := e.src.stamps()
	if err != nil {
		return 0
	}
	return e.unstable(stamps, settle)
}

// unstable records the stamps observed now and returns how long until the
// last file whose stamp changed has kept it for settle. Files no longer
// there are forgotten (their disappearance is settling's to judge).
func (e *Engine) unstable(stamps map[string]stamp, settle time.Duration) time.Duration {
	now := e.opts.now()
	var wait time.Duration
	for name, st := range stamps {
		o, ok := e.seen[name]
		if !ok || !o.stamp.Same(st) {
			o = observed{stamp: st, since: now}
			if e.seen == nil {
				e.seen = map[string]observed{}
			}
			e.seen[name] = o
			if l := e.opts.logger; l != nil {
				l.Debug("toolgate: a file changed; it is loaded once it has stayed the same for the settle window",
					slog.String("file", name), slog.Duration("settle", settle))
			}
		}
		if w := o.since.Add(settle).Sub(now); w > wait {
			wait = w
		}
	}
	for name := range e.seen {
		if _, ok := stamps[name]; !ok {
			delete(e.seen, name)
		}
	}
	return wait
}

// settling records which files of cur are missing by the predicate, and
// returns how long until the last of them has been missing for settle; 0
// when none is missing or every one is past its window (a real deletion).
func (e *Engine) settling(cur *Revision, settle time.Duration, missing func(string) bool) time.Duration {
	now := e.opts.now()
	var wait time.Duration
	for _, f := range cur.files {
		if !missing(f) {
			delete(e.gone, f)
			continue
		}
		since, ok := e.gone[f]
		if !ok {
			if e.gone == nil {
				e.gone = map[string]time.Time{}
			}
			since = now
			e.gone[f] = now
			if l := e.opts.logger; l != nil {
				l.Info("toolgate: a file of the serving revision is missing; waiting for the settle window before believing it",
					slog.String("file", f), slog.String("revision", cur.String()), slog.Duration("settle", settle))
			}
		}
		if w := since.Add(settle).Sub(now); w > wait {
			wait = w
		}
	}
	return wait
}

// failed records a failed reload, logs it once per distinct error and tells
// the listeners.
func (e *Engine) failed(cur *Revision, err error) {
	e.mu.Lock()
	e.lastErr, e.lastErrAt = err, time.Now()
	e.failures++
	msg := err.Error()
	log := msg != e.loggedErr
	e.loggedErr = msg
	listeners := slices.Clone(e.listeners)
	e.mu.Unlock()

	if l := e.opts.logger; l != nil && log {
		l.Error("toolgate: reload failed; the last good revision keeps serving",
			slog.String("revision", cur.String()), slog.String("error", msg))
	}
	for _, l := range listeners {
		if l.onError != nil {
			l.onError(err)
		}
	}
}

// Subscribe calls onReload after every swap to a new revision and onError
// with the error of every failed reload from now on (either may be nil),
// whoever made them, until the returned stop is called: what a file
// watcher (package watch) reports to its host. The rules of Listen apply
// to both.
func (e *Engine) Subscribe(onReload func(old, new *Revision), onError func(error)) (stop func()) {
	return e.addListener(&listener{onReload: onReload, onError: onError})
}

// ReloadAttempt is one reload attempt, without waiting, as a file watcher
// makes it: it reports how long the settle window (settle; zero or
// negative: the engine's, WithSettle) still holds the reload back, and
// how long to wait before trying again. Its swaps and failures are logged
// and reach the listeners like Reload's.
func (e *Engine) ReloadAttempt(ctx context.Context, settle time.Duration) (changed bool, wait time.Duration, err error) {
	if settle <= 0 {
		settle = e.opts.settle
	}
	return e.reload(ctx, settle)
}

// Logger is the logger the engine was given (WithLogger), nil when none.
func (e *Engine) Logger() *slog.Logger { return e.opts.logger }

// Listen calls onReload after every swap to a new revision from now on,
// whoever made it (a watch, or a host's Reload, for instance after an
// upstream's tools changed), until the returned stop is called. The rules
// of watch.Options.OnReload apply: calls come one at a time, in the order of
// the swaps, from the goroutine that reloaded; onReload must not call
// Reload.
func (e *Engine) Listen(onReload func(old, new *Revision)) (stop func()) {
	return e.addListener(&listener{onReload: onReload})
}

// ReportFailure records a failure to get a new revision that happened
// before any build, such as a bundle refused for its signature or not
// downloaded (docs/contract.md §14): like a failed reload it is kept as LastError and
// in Status, counted, logged once and passed to the listeners' OnError,
// until a reload succeeds. The current revision keeps serving.
func (e *Engine) ReportFailure(err error) {
	if err == nil {
		return
	}
	e.reloadMu.Lock()
	defer e.reloadMu.Unlock()
	e.failed(e.cur.Load(), err)
}
