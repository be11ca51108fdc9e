// Package depstest reads a package's import graph in its own tests, so a
// test can say which packages a package must not link. The graph is the go
// tool's own (`go list -deps`, the package without its tests). Tests only.
package depstest

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Deps returns every import path the package in the test's working
// directory links, itself included, as `go list -deps .` prints them. It
// fails t if the go tool cannot list them.
func Deps(t testing.TB) []string {
	t.Helper()
	return DepsOf(t, ".")
}

// DepsOf is Deps of the package pattern pkg ("./hooks/audit", an import
// path), resolved in the test's working directory.
func DepsOf(t testing.TB, pkg string) []string {
	t.Helper()
	goTool, err := exec.LookPath("go") // go test puts its GOROOT/bin first in PATH
	require.NoError(t, err)
	out, err := exec.Command(goTool, "list", "-deps", pkg).Output()
	require.NoError(t, err, "go list -deps %s", pkg)
	return strings.Fields(string(out))
}

// RefusePrefixes fails t for the first path of deps that is one of banned
// or lies below one: "a/b" refuses "a/b" and "a/b/c", not "a/bc". who
// names the linking package in the failure ("who links path").
func RefusePrefixes(t testing.TB, deps []string, who string, banned ...string) {
	t.Helper()
	for _, p := range deps {
		for _, b := range banned {
			require.False(t, Under(p, b), "%s links %s", who, p)
		}
	}
}

// Imports returns the direct imports of each package the patterns name
// (`go list` run in the test's working directory), keyed by import path;
// tests are not listed. It fails t if the go tool cannot list them.
func Imports(t testing.TB, patterns ...string) map[string][]string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	require.NoError(t, err)
	args := append([]string{"list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}"}, patterns...)
	out, err := exec.Command(goTool, args...).Output()
	require.NoError(t, err, "go list %s", strings.Join(patterns, " "))
	imports := map[string][]string{}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) > 0 {
			imports[f[0]] = f[1:]
		}
	}
	return imports
}

// Under reports whether path is prefix or lies below it: "a/b" is under
// "a/b" and "a/b/c" is, "a/bc" is not.
func Under(path, prefix string) bool {
	return path == prefix || strings.HasPrefix(path, prefix+"/")
}
