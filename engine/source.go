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
	name  string // path as shown to people: OS path, or FS path
	rel   string // slash path relative to the policy directory
	data  []byte
	stamp stamp // the file's version when it was read
}

// stamp tells the versions of a file apart without reading it: size,
// modification time and, on disk, the file's identity (a rename over
// replaces it). The zero stamp is no version: a file that changed while it
// was read.
type stamp struct {
	info fs.FileInfo
	disk bool
}

// same reports whether s and t are one version of a file.
func (s stamp) same(t stamp) bool {
	if s.info == nil || t.info == nil || s.disk != t.disk {
		return false
	}
	return s.info.Size() == t.info.Size() && s.info.ModTime().Equal(t.info.ModTime()) &&
		(!s.disk || os.SameFile(s.info, t.info))
}

// stampOf stats a file, following symlinks: on disk when fsys is nil.
func stampOf(fsys fs.FS, name string) (stamp, error) {
	if fsys == nil {
		st, err := os.Stat(name)
		return stamp{info: st, disk: true}, err
	}
	st, err := fs.Stat(fsys, name)
	return stamp{info: st}, err
}

// readStamped reads a file with fsx's bounds, between two stats: the
// stamp is the zero stamp when the file changed while it was read.
func readStamped(fsys fs.FS, name string) ([]byte, stamp, error) {
	before, err := stampOf(fsys, name)
	if err != nil {
		return nil, stamp{}, err
	}
	var data []byte
	if fsys == nil {
		data, err = fsx.ReadFile(name)
	} else {
		data, err = fsx.ReadFileFS(fsys, name)
	}
	if err != nil {
		return nil, stamp{}, err
	}
	if after, err := stampOf(fsys, name); err != nil || !after.same(before) {
		return data, stamp{}, nil
	}
	return data, before, nil
}

func (s Source) readRegistry() (sourceFile, error) {
	data, st, err := readStamped(s.registryFS(), s.Registry)
	if err != nil {
		return sourceFile{}, fmt.Errorf("read registry: %w", err)
	}
	return sourceFile{name: s.Registry, rel: path.Base(filepath.ToSlash(s.Registry)), data: data, stamp: st}, nil
}

// stamps returns the stamp of every file a build would read now (registry,
// policies and data), by name as in Revision.Files, without reading them.
func (s Source) stamps() (map[string]stamp, error) {
	reg, err := stampOf(s.registryFS(), s.Registry)
	if err != nil {
		return nil, fmt.Errorf("read registry: %w", err)
	}
	files, err := s.walkPolicies(false)
	if err != nil {
		return nil, err
	}
	out := make(map[string]stamp, len(files)+1)
	out[s.Registry] = reg
	for _, f := range files {
		out[f.name] = f.stamp
	}
	return out, nil
}

// maxPolicyDepth bounds directory recursion, so a symlink cycle ends.
const maxPolicyDepth = 16

// readPolicies returns every policy (*.rego but not *_test.rego) and data
// file (data.json, data.yaml, data.yml) below the policy directory, sorted by
// path. Names beginning with "." are skipped (a ConfigMap's "..2026_…"
// folders); symlinks, also to directories, are followed. A file or
// sub-directory that disappears while the walk reads it is skipped: whether
// the disappearance is believed is the settle window's call (see Reload).
func (s Source) readPolicies() ([]sourceFile, error) { return s.walkPolicies(true) }

// walkPolicies is readPolicies; without read it only stamps the files.
func (s Source) walkPolicies(read bool) ([]sourceFile, error) {
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
			shown, from, at := p, fsys, p
			if onDisk {
				shown = filepath.Join(s.Policies, filepath.FromSlash(r))
				from, at = nil, shown
			}
			var (
				data []byte
				st   stamp
			)
			if read {
				data, st, err = readStamped(from, at)
			} else {
				st, err = stampOf(from, at)
			}
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					continue // removed while we walked; the settle window judges it
				}
				return err
			}
			out = append(out, sourceFile{name: shown, rel: r, data: data, stamp: st})
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
