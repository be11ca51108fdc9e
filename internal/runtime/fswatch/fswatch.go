// Package fswatch keeps fsnotify's watches on the directories that hold a
// registry file and a policy tree (docs/contract.md §9): the registry's directory, the
// policy directory recursively (symlinked directories through their
// targets, and the directories holding the targets of symlinked files),
// and tells the events that may change what a load reads from the others.
// watch.Run is its one user.
package fswatch

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/fsnotify/fsnotify"

	"github.com/toolgate/toolgate/internal/regoload"
)

// Watcher keeps fsnotify's watches in line with the directories of a
// registry file and a policy tree. It is not safe for concurrent use: one
// loop reads its events and calls its methods.
type Watcher struct {
	fw       *fsnotify.Watcher
	registry string // "" when the registry is not on disk
	policies string // "" when the policies are not on disk
	logger   *slog.Logger
	dirs     map[string]*dirRule // by resolved absolute path
	warned   string
}

// New starts watching nothing yet: call Sync. registry and policies are OS
// paths, "" for a part that is not on disk. logger may be nil.
func New(registry, policies string, logger *slog.Logger) (*Watcher, error) {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	return &Watcher{fw: fw, registry: registry, policies: policies, logger: logger}, nil
}

// Close stops every watch and closes the channels.
func (w *Watcher) Close() error { return w.fw.Close() }

// Events are fsnotify's events; read them with Relevant.
func (w *Watcher) Events() <-chan fsnotify.Event { return w.fw.Events }

// Errors are fsnotify's errors; see Overflow.
func (w *Watcher) Errors() <-chan error { return w.fw.Errors }

// Overflow reports whether err says that events were lost: everything must
// be looked at again.
func Overflow(err error) bool { return errors.Is(err, fsnotify.ErrEventOverflow) }

// dirRule says which events of a watched directory matter: all of them (a
// directory of the policy tree), or only those naming certain entries (the
// registry's directory, which may hold anything).
type dirRule struct {
	all   bool
	names map[string]bool
}

// Relevant reports whether an event may change what a build reads. Chmod
// alone changes no content; editors' hidden swap files (".x.swp") are no
// policy. Names beginning with ".." are a ConfigMap's machinery ("..data",
// "..2026_…") and always count.
func (w *Watcher) Relevant(ev fsnotify.Event) bool {
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
		return !regoload.Hidden(base)
	}
	return r.names[base]
}

// Sync computes the directories to watch and brings the watches in line.
// Adding a directory that is already watched is harmless and renews a watch
// that the kernel dropped when the directory was deleted and re-created.
// It fails only when the registry's or the policy root's directory cannot
// be watched.
func (w *Watcher) Sync() error {
	want, must, err := watchDirs(w.registry, w.policies)
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
				w.Warn("toolgate: cannot watch a directory", err)
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

// Warn logs err, but not twice in a row.
func (w *Watcher) Warn(msg string, err error) {
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
func watchDirs(registry, policies string) (map[string]*dirRule, map[string]bool, error) {
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

	if registry != "" {
		reg, err := absResolved(registry)
		if err != nil {
			return nil, nil, err
		}
		name(filepath.Dir(reg), filepath.Base(reg))
		must[filepath.Dir(reg)] = true
		if t, err := filepath.EvalSymlinks(reg); err == nil && t != reg {
			name(filepath.Dir(t), filepath.Base(t)) // the registry is a link: its target's directory too
		}
	}
	if policies == "" {
		return dirs, must, nil // the policies are not on disk
	}

	root, err := absResolved(policies)
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
		if r := dirs[dir]; (r != nil && r.all) || depth > regoload.MaxDepth {
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
			if regoload.Hidden(ent.Name()) {
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
				k := regoload.KindOf(ent.Name())
				switch {
				case err != nil:
				case st.IsDir():
					walk(t, depth+1)
				case k == regoload.Policy || k == regoload.Data:
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
