package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// DefaultDebounce is how long Watch waits for a burst of file events to end
// before it reloads.
const DefaultDebounce = 100 * time.Millisecond

// ErrNotWatchable is returned by Watch for a Source read from an fs.FS: only
// files of the operating system can be watched.
var ErrNotWatchable = errors.New("engine: a source on an fs.FS cannot be watched")

// WatchOptions configures Watch. The zero value is ready to use.
type WatchOptions struct {
	// Debounce is how long the file events of one burst are collected before
	// a reload (default DefaultDebounce). A burst that does not end still
	// reloads after four times Debounce.
	Debounce time.Duration
	// Settle is the settle window (SPEC §9): a file of the serving revision
	// that is missing is believed gone only after it has been missing this
	// long, and a file that changed is loaded only once its size and
	// modification time have stayed the same this long; until then no
	// revision without it, or with a version of it still being written, is
	// built or served. Zero or negative: the engine's (WithSettle, default
	// DefaultSettle).
	Settle time.Duration
	// OnReload, if set, is called after every swap to a new revision while
	// Watch runs, also for swaps made by a host's own Reload. Calls come one
	// at a time, in the order of the swaps, from the goroutine that
	// reloaded; they must not call Reload.
	OnReload func(old, new *Revision)
	// OnError, if set, is called with the error of every failed reload
	// while Watch runs (the log has each distinct error once). The same
	// rules as for OnReload apply.
	OnError func(error)
}

func (o WatchOptions) debounce() time.Duration {
	if o.Debounce > 0 {
		return o.Debounce
	}
	return DefaultDebounce
}

// Watch reloads the engine whenever its registry, policies or data change,
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
// Changes made before Watch has set up its watches are not missed: it tries
// a reload once after setting them up. A host may call Reload itself at any
// time, with or without Watch.
func (e *Engine) Watch(ctx context.Context, opts WatchOptions) error {
	if e.src.registryFS() != nil && e.src.policyFS() != nil {
		return ErrNotWatchable
	}
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	defer fw.Close()
	w := &watcher{e: e, fw: fw, logger: e.opts.logger}
	if err := w.sync(); err != nil {
		return err
	}
	defer e.addListener(&listener{onReload: opts.OnReload, onError: opts.OnError})()

	settle := opts.Settle
	if settle <= 0 {
		settle = e.opts.settle
	}
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
		case ev, ok := <-fw.Events:
			if !ok {
				return nil
			}
			if !w.relevant(ev) {
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
		case err, ok := <-fw.Errors:
			if !ok {
				return nil
			}
			w.warn("toolgate: file watch error", err)
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				// Events were lost: look at everything again.
				schedule(time.Now().Add(debounce))
			}
		case <-timer.C:
			burst, due = time.Time{}, time.Time{}
			if err := w.sync(); err != nil {
				w.warn("toolgate: file watch error", err)
			}
			_, wait, _ := e.reload(ctx, settle) // reported to the log and the listeners
			if wait > 0 {
				schedule(time.Now().Add(wait))
			}
		}
	}
}

// watcher keeps fsnotify's watches in line with the source's directories.
type watcher struct {
	e      *Engine
	fw     *fsnotify.Watcher
	logger *slog.Logger
	dirs   map[string]*dirRule // by resolved absolute path
	warned string
}

// dirRule says which events of a watched directory matter: all of them (a
// directory of the policy tree), or only those naming certain entries (the
// registry's directory, which may hold anything).
type dirRule struct {
	all   bool
	names map[string]bool
}

// relevant reports whether an event may change what a build reads. Chmod
// alone changes no content; editors' hidden swap files (".x.swp") are no
// policy. Names beginning with ".." are a ConfigMap's machinery ("..data",
// "..2026_…") and always count.
func (w *watcher) relevant(ev fsnotify.Event) bool {
	if ev.Op == fsnotify.Chmod {
		return false
	}
	if _, ok := w.dirs[ev.Name]; ok {
		return true // a watched directory itself went away or moved
	}
	base := filepath.Base(ev.Name)
	r, ok := w.dirs[filepath.Dir(ev.Name)]
	switch {
	case !ok:
		return false
	case strings.HasPrefix(base, ".."):
		return true
	case r.all:
		return !strings.HasPrefix(base, ".")
	}
	return r.names[base]
}

// sync computes the directories to watch and brings the watches in line.
// Adding a directory that is already watched is harmless and renews a watch
// that the kernel dropped when the directory was deleted and re-created.
// It fails only when the registry's or the policy root's directory cannot
// be watched.
func (w *watcher) sync() error {
	want, must, err := w.e.src.watchDirs()
	if err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	var errs []error
	for dir := range want {
		if err := w.fw.Add(dir); err != nil {
			switch {
			case must[dir]:
				errs = append(errs, fmt.Errorf("watch %s: %w", dir, err))
			case !errors.Is(err, os.ErrNotExist): // gone since we looked: fine
				w.warn("toolgate: cannot watch a directory", err)
			}
		}
	}
	for dir := range w.dirs {
		if _, ok := want[dir]; !ok {
			_ = w.fw.Remove(dir) // may be gone already, with its watch
		}
	}
	w.dirs = want
	return errors.Join(errs...)
}

// warn logs err, but not twice in a row.
func (w *watcher) warn(msg string, err error) {
	if w.logger == nil || err.Error() == w.warned {
		return
	}
	w.warned = err.Error()
	w.logger.Warn(msg, slog.String("error", err.Error()))
}

// watchDirs returns the directories that hold what a build reads, by
// resolved absolute path, with which of their events matter; must marks
// those that have to be watchable (the registry's and the policy root's).
//
// Dot-directories are not walked, as they are not loaded: a ConfigMap's
// "..data" swap is seen in the directory holding "..data", and the
// directories holding the targets of symlinked files are watched for
// in-place edits behind a link.
func (s Source) watchDirs() (map[string]*dirRule, map[string]bool, error) {
	dirs := map[string]*dirRule{}
	must := map[string]bool{}
	name := func(dir, base string) {
		r := dirs[dir]
		if r == nil {
			r = &dirRule{names: map[string]bool{}}
			dirs[dir] = r
		}
		r.names[base] = true
	}

	if s.registryFS() == nil {
		reg, err := absResolved(s.Registry)
		if err != nil {
			return nil, nil, err
		}
		name(filepath.Dir(reg), filepath.Base(reg))
		must[filepath.Dir(reg)] = true
		if t, err := filepath.EvalSymlinks(reg); err == nil && t != reg {
			name(filepath.Dir(t), filepath.Base(t)) // the registry is a link: its target's directory too
		}
	}
	if s.policyFS() != nil {
		return dirs, must, nil // the policies are not on disk
	}

	root, err := absResolved(s.Policies)
	if err != nil {
		return nil, nil, err
	}
	// The root's parent sees the root itself replaced.
	name(filepath.Dir(root), filepath.Base(root))
	if t, err := filepath.EvalSymlinks(root); err == nil {
		root = t
	}
	must[root] = true

	var walk func(dir string, depth int)
	walk = func(dir string, depth int) {
		if r := dirs[dir]; (r != nil && r.all) || depth > maxPolicyDepth {
			return // seen already (a link cycle, or two links to one directory)
		}
		if r := dirs[dir]; r != nil {
			r.all = true
		} else {
			dirs[dir] = &dirRule{all: true}
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			return // gone, or unreadable: the build reports what matters
		}
		for _, ent := range entries {
			if strings.HasPrefix(ent.Name(), ".") {
				continue
			}
			p := filepath.Join(dir, ent.Name())
			switch {
			case ent.IsDir():
				walk(p, depth+1)
			case ent.Type()&os.ModeSymlink != 0:
				t, err := filepath.EvalSymlinks(p)
				if err != nil {
					continue // dangling: nothing is loaded through it
				}
				st, err := os.Stat(t)
				switch {
				case err != nil:
				case st.IsDir():
					walk(t, depth+1)
				case isPolicyFile(ent.Name()) || isDataFile(ent.Name()):
					name(filepath.Dir(t), filepath.Base(t))
				}
			}
		}
	}
	walk(root, 0)
	return dirs, must, nil
}

// absResolved returns p absolute, with the symlinks of its directory
// resolved (so that paths match those fsnotify reports for the watches),
// but its last element kept as it is.
func absResolved(p string) (string, error) {
	a, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(a))
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, filepath.Base(a)), nil
}
