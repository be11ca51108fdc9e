package proctest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var (
	buildMu sync.Mutex
	builds  = map[string]*build{}
)

type build struct {
	once sync.Once
	path string
	err  error
}

// Build builds the main package pkg and returns the binary's path: pkg
// is relative to the module root ("./cmd/toolgate") or a package path of
// the module graph. A failed build fails every test that asks for it.
//
// The binary is linked at most once per checkout and set of sources, not
// once per test binary: it is kept in BinDir, named after pkg, and
// `go build -o` there leaves it alone when it is up to date (go's own
// build ID says so: the sources, the Go version, the build flags). A file
// lock beside it makes the test binaries of `go test ./...`, which run
// side by side, wait for one link instead of making one each. Rebuilding
// replaces the file, so a program started from the old one runs on.
//
// go test caches a package's result by what its test binary is built from
// and the files it opened: Build stats pkg's Go files when pkg is in the
// module, so that an edit of them re-runs the test (a test of another
// package should also import what the binary runs, blank if need be).
func Build(t testing.TB, pkg string) string {
	t.Helper()
	bin, err := Binary(pkg)
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// Binary is Build for TestMain: it returns the error instead of failing
// a test.
func Binary(pkg string) (string, error) {
	buildMu.Lock()
	b := builds[pkg]
	if b == nil {
		b = &build{}
		builds[pkg] = b
	}
	buildMu.Unlock()
	b.once.Do(func() { b.path, b.err = link(pkg) })
	return b.path, b.err
}

// BinDir is where Build keeps the binaries of this checkout: a directory
// of the user's cache directory (of the temporary one without it) named
// after Root, so that two checkouts never share a binary.
func BinDir() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		base = filepath.Join(os.TempDir(), fmt.Sprintf("toolgate-test-%d", os.Getuid()))
	}
	root, err := filepath.Abs(Root)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(filepath.Clean(root)))
	dir := filepath.Join(base, "toolgate-test-bin", hex.EncodeToString(sum[:8]))
	return dir, os.MkdirAll(dir, 0o700)
}

func link(pkg string) (string, error) {
	local := strings.HasPrefix(pkg, "./")
	if local {
		entries, err := os.ReadDir(filepath.Join(Root, pkg))
		if err != nil {
			return "", err
		}
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".go") {
				_, _ = os.Stat(filepath.Join(Root, pkg, e.Name()))
			}
		}
	}
	name := strings.NewReplacer("/", "_", ".", "_").Replace(strings.TrimPrefix(pkg, "./"))
	return Cached(name, func(bin string) error {
		cmd := exec.Command("go", "build", "-o", bin, pkg)
		cmd.Dir = Root
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
		}
		return nil
	})
}

// Cached runs buildTo(out) with out a path in BinDir named name, holding a
// file lock on it, and returns out. buildTo is a `go build -o out` (its
// up-to-date check keeps a binary that is current): for binaries Build
// cannot make, with other flags or for another platform.
func Cached(name string, buildTo func(out string) error) (string, error) {
	dir, err := BinDir()
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, name)
	unlock, err := lockFile(out + ".lock")
	if err != nil {
		return "", err
	}
	defer unlock()
	if err := buildTo(out); err != nil {
		return "", err
	}
	return out, nil
}

// RequireBuilds skips t under -short, saying what it builds, and only
// then: for a test that builds a release artefact, which costs minutes on
// a cold cache (every other run, CI's included, runs it).
func RequireBuilds(t testing.TB, what string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("builds %s: skipped with -short", what)
	}
}
