package bundle

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	opabundle "github.com/open-policy-agent/opa/v1/bundle"

	"github.com/toolgate/toolgate/engine"
)

// OpenFile reads the bundle file (.tar.gz) at path as the server reads a
// downloaded one, verifying its signature when s names a key file, and
// returns its engine.Source: for `toolgate check`, `explain` and `test`.
func OpenFile(path string, s Signing) (engine.Source, error) {
	f, err := os.Open(path)
	if err != nil {
		return engine.Source{}, fmt.Errorf("bundle: %w", err)
	}
	defer f.Close()
	var bvc *opabundle.VerificationConfig
	if s.KeyFile != "" {
		if bvc, err = VerificationOf(s); err != nil {
			return engine.Source{}, err
		}
	}
	b, err := Read(f, bvc)
	if err != nil {
		return engine.Source{}, fmt.Errorf("bundle %s: %w", path, err)
	}
	return ToSource(&b)
}

// Unpack writes the policy and data files of a source ToSource made
// below dir, at their paths in the bundle, so that tools reading
// directories (policytest) read them as the server does. The registry is
// not written: it is not a policy file.
func Unpack(src engine.Source, dir string) error {
	return fs.WalkDir(src.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || p == src.Registry {
			return err
		}
		data, err := fs.ReadFile(src.FS, p)
		if err != nil {
			return err
		}
		out := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(out), 0o700); err != nil {
			return err
		}
		return os.WriteFile(out, data, 0o600)
	})
}
