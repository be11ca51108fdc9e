package engine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"github.com/toolgate/toolgate/internal/regoload"
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
	// Revision, when set, names the revision this source is (an OPA
	// bundle's manifest revision, docs/contract.md §14): it is Revision.Label and
	// Revision.String of every revision built from it, and part of its hash.
	Revision string
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
type sourceFile = regoload.File

// stamp is a file's version (see regoload.Stamp).
type stamp = regoload.Stamp

func (s Source) readRegistry() (sourceFile, error) {
	data, st, err := regoload.ReadStamped(s.registryFS(), s.Registry)
	if err != nil {
		return sourceFile{}, fmt.Errorf("read registry: %w", err)
	}
	return sourceFile{Name: s.Registry, Rel: path.Base(filepath.ToSlash(s.Registry)), Data: data, Stamp: st}, nil
}

// ReadRegistry reads the registry file of s, through the bounds of every
// operator file (a regular file of at most 16 MiB), from RegistryFS, FS or
// the operating system's file system.
func (s Source) ReadRegistry() ([]byte, error) {
	data, _, err := regoload.ReadStamped(s.registryFS(), s.Registry)
	return data, err
}

// stamps returns the stamp of every file a build would read now (registry,
// policies and data), by name as in Revision.Files, without reading them.
func (s Source) stamps() (map[string]stamp, error) {
	reg, err := regoload.StampOf(s.registryFS(), s.Registry)
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
		out[f.Name] = f.Stamp
	}
	return out, nil
}

// readPolicies returns every policy (*.rego but not *_test.rego) and data
// file (data.json, data.yaml, data.yml) below the policy directory, sorted by
// path, as regoload.Walk finds them: names beginning with "." are skipped (a
// ConfigMap's "..2026_…" folders); symlinks, also to directories, are
// followed. A file or sub-directory that disappears while the walk reads it
// is skipped: whether the disappearance is believed is the settle window's
// call (see Reload).
func (s Source) readPolicies() ([]sourceFile, error) { return s.walkPolicies(true) }

// walkPolicies is readPolicies; without read it only stamps the files.
func (s Source) walkPolicies(read bool) ([]sourceFile, error) {
	files, err := regoload.Walk(s.policyFS(), s.Policies, regoload.WalkOptions{StampOnly: !read})
	if err != nil {
		return nil, fmt.Errorf("read policies: %w", err)
	}
	return files, nil
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
