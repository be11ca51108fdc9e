package regoload

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/toolgate/toolgate/diag"
)

// Kind is what a file holds.
type Kind int

// The kinds of files a load reads.
const (
	Other  Kind = iota // not loaded
	Policy             // *.rego, not *_test.rego
	Test               // *_test.rego
	Data               // data.json, data.yaml, data.yml
)

// KindOf tells, from its base name, what the file named name holds. Format
// detection lives here alone.
func KindOf(name string) Kind {
	base := path.Base(filepath.ToSlash(name))
	switch {
	case strings.HasSuffix(base, "_test.rego"):
		return Test
	case strings.HasSuffix(base, ".rego"):
		return Policy
	case base == "data.json" || base == "data.yaml" || base == "data.yml":
		return Data
	}
	return Other
}

// Hidden reports whether a file or directory named name is skipped by a
// walk: its name begins with ".".
func Hidden(name string) bool { return strings.HasPrefix(name, ".") }

// File is one file of a load.
type File struct {
	// Name is the file's path as shown to people: an OS path, or a path in
	// the file system walked. Diagnostics and rule locations carry it.
	Name string
	// Rel is the slash path relative to the directory walked: a data
	// document mounts at the data path of its directory.
	Rel string
	// Kind is what the file holds: Policy, Test or Data.
	Kind Kind
	// Data is the content; nil when only stamped.
	Data []byte
	// Stamp is the file's version when it was read (or stamped).
	Stamp Stamp
}

// MaxDepth bounds directory recursion, so a symlink cycle ends.
const MaxDepth = 16

// WalkOptions says what Walk keeps.
type WalkOptions struct {
	// Tests keeps *_test.rego files too: tests are never served.
	Tests bool
	// StampOnly stats the files without reading them.
	StampOnly bool
}

// Walk returns every policy and data file below the directory root, sorted
// by Rel. With fsys nil, root is a path on the operating system's file
// system; otherwise a slash path inside fsys. Names beginning with "." are
// skipped; symlinks, also to directories, are followed. A file or
// sub-directory that disappears while the walk reads it is skipped.
//
// Files that cannot be read (not a regular file, larger than 16 MiB, no
// permission) do not stop the walk: once it has ended, Walk returns a
// *[diag.List] naming each of them, which wraps their errors (errors.Is
// with fsx.ErrNotRegular works). Any other error (the root cannot be read,
// directories nested deeper than MaxDepth) is returned as it is.
func Walk(fsys fs.FS, root string, o WalkOptions) ([]File, error) {
	onDisk := fsys == nil
	dirRoot := root
	if onDisk {
		fsys = os.DirFS(root)
		dirRoot = "."
	}
	var (
		out  []File
		bad  []diag.Diagnostic
		errs []error
	)
	var walk func(dir, rel string, depth int) error
	walk = func(dir, rel string, depth int) error {
		if depth > MaxDepth {
			return fmt.Errorf("%s: directories nested deeper than %d (a symlink cycle?)", dir, MaxDepth)
		}
		entries, err := fs.ReadDir(fsys, dir)
		if err != nil {
			if depth > 0 && errors.Is(err, fs.ErrNotExist) {
				return nil // removed while we walked: as if we had come a moment later
			}
			return err
		}
		for _, e := range entries {
			name := e.Name()
			if Hidden(name) {
				continue
			}
			p, r := path.Join(dir, name), path.Join(rel, name)
			isDir := e.IsDir()
			if e.Type()&fs.ModeSymlink != 0 {
				st, err := fs.Stat(fsys, p)
				if err != nil {
					if errors.Is(err, fs.ErrNotExist) {
						continue // a dangling link: nothing to load
					}
					return err
				}
				isDir = st.IsDir()
			}
			if isDir {
				if err := walk(p, r, depth+1); err != nil {
					return err
				}
				continue
			}
			k := KindOf(name)
			if k == Other || (k == Test && !o.Tests) {
				continue
			}
			shown, from, at := p, fsys, p
			if onDisk {
				shown = filepath.Join(root, filepath.FromSlash(r))
				from, at = nil, shown
			}
			f := File{Name: shown, Rel: r, Kind: k}
			if o.StampOnly {
				f.Stamp, err = StampOf(from, at)
				if err != nil {
					if errors.Is(err, fs.ErrNotExist) {
						continue
					}
					return err
				}
			} else if f.Data, f.Stamp, err = ReadStamped(from, at); err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					continue // removed while we walked
				}
				bad = append(bad, diag.Diagnostic{File: shown, Message: err.Error()})
				errs = append(errs, err)
				continue
			}
			out = append(out, f)
		}
		return nil
	}
	if err := walk(dirRoot, "", 0); err != nil {
		// os.DirFS names its paths relative to the root ("."): say which
		// directory on disk that is.
		var pe *fs.PathError
		if onDisk && errors.As(err, &pe) && !filepath.IsAbs(pe.Path) {
			pe.Path = filepath.Join(root, filepath.FromSlash(pe.Path))
		}
		return nil, err
	}
	if len(bad) > 0 {
		return nil, &diag.List{Diagnostics: bad, Err: errors.Join(errs...), Style: unreadableStyle}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Rel < out[j].Rel })
	return out, nil
}

// unreadableStyle renders the files that cannot be read as their errors do.
var unreadableStyle = &diag.Style{Inline: true, Item: func(d diag.Diagnostic) string { return d.Message }}

// ReadNamed reads a file of the operating system named explicitly: it is
// loaded whatever its name, as a policy (or test) when it ends in .rego,
// as a data document at the root of data otherwise. A file that cannot be
// read is a *[diag.List] as with Walk.
func ReadNamed(name string) (File, error) {
	k := KindOf(name)
	if !strings.HasSuffix(name, ".rego") {
		k = Data
	}
	f := File{Name: name, Rel: path.Base(filepath.ToSlash(name)), Kind: k}
	var err error
	if f.Data, f.Stamp, err = ReadStamped(nil, name); err != nil {
		return File{}, &diag.List{Diagnostics: []diag.Diagnostic{{File: name, Message: err.Error()}}, Err: err, Style: unreadableStyle}
	}
	return f, nil
}
