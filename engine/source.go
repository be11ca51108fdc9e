package engine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/toolgate/toolgate/internal/fsx"
)

// Source says where a revision is read from: a registry file and a policy
// directory. With FS nil both are paths on the operating system's file
// system; otherwise they are slash-separated paths inside FS (for example an
// embed.FS holding the bundled example). RegistryFS and PolicyFS, when set,
// override FS for their part alone, so a registry on disk can be served with
// the bundled policies (only the parts on disk are watched).
type Source struct {
	FS         fs.FS
	RegistryFS fs.FS
	PolicyFS   fs.FS
	Registry   string
	Policies   string
}

func (s Source) registryFS() fs.FS {
	if s.RegistryFS != nil {
		return s.RegistryFS
	}
	return s.FS
}

func (s Source) policyFS() fs.FS {
	if s.PolicyFS != nil {
		return s.PolicyFS
	}
	return s.FS
}

// sourceFile is one file read for a revision.
type sourceFile struct {
	name string // path as shown to people: OS path, or FS path
	rel  string // slash path relative to the policy directory
	data []byte
}

func (s Source) readRegistry() (sourceFile, error) {
	var (
		data []byte
		err  error
	)
	if fsys := s.registryFS(); fsys == nil {
		data, err = fsx.ReadFile(s.Registry)
	} else {
		data, err = fsx.ReadFileFS(fsys, s.Registry)
	}
	if err != nil {
		return sourceFile{}, fmt.Errorf("read registry: %w", err)
	}
	return sourceFile{name: s.Registry, rel: path.Base(filepath.ToSlash(s.Registry)), data: data}, nil
}

// maxPolicyDepth bounds directory recursion, so a symlink cycle ends.
const maxPolicyDepth = 16

// readPolicies returns every policy (*.rego but not *_test.rego) and data
// file (data.json, data.yaml, data.yml) below the policy directory, sorted by
// path. Names beginning with "." are skipped (a ConfigMap's "..2026_…"
// folders); symlinks, also to directories, are followed. A file or
// sub-directory that disappears while the walk reads it is skipped: whether
// the disappearance is believed is the settle window's call (see Reload).
func (s Source) readPolicies() ([]sourceFile, error) {
	fsys := s.policyFS()
	onDisk := fsys == nil
	root := s.Policies
	if fsys == nil {
		fsys = os.DirFS(s.Policies)
		root = "."
	}
	var out []sourceFile
	var walk func(dir, rel string, depth int) error
	walk = func(dir, rel string, depth int) error {
		if depth > maxPolicyDepth {
			return fmt.Errorf("%s: directories nested deeper than %d (a symlink cycle?)", dir, maxPolicyDepth)
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
			if strings.HasPrefix(name, ".") {
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
			if !isPolicyFile(name) && !isDataFile(name) {
				continue
			}
			shown := p
			var data []byte
			if onDisk {
				shown = filepath.Join(s.Policies, filepath.FromSlash(r))
				data, err = fsx.ReadFile(shown)
			} else {
				data, err = fsx.ReadFileFS(fsys, p)
			}
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					continue // removed while we walked; the settle window judges it
				}
				return err
			}
			out = append(out, sourceFile{name: shown, rel: r, data: data})
		}
		return nil
	}
	if err := walk(root, "", 0); err != nil {
		return nil, fmt.Errorf("read policies: %w", err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].rel < out[j].rel })
	return out, nil
}

func isPolicyFile(name string) bool {
	return strings.HasSuffix(name, ".rego") && !strings.HasSuffix(name, "_test.rego")
}

func isDataFile(name string) bool {
	return name == "data.json" || name == "data.yaml" || name == "data.yml"
}

// exists reports whether the named file (a path as in Revision.Files) is
// there now as a file, following symlinks, so that the walk of the next
// build reads it. A file that cannot be checked for another reason than its
// absence counts as there: the build will report it.
func (s Source) exists(name string) bool {
	var (
		st  fs.FileInfo
		err error
	)
	fsys := s.policyFS()
	if name == s.Registry {
		fsys = s.registryFS()
	}
	if fsys == nil {
		st, err = os.Stat(name)
	} else {
		st, err = fs.Stat(fsys, name)
	}
	if err != nil {
		return errors.Is(err, fs.ErrPermission)
	}
	return !st.IsDir()
}
