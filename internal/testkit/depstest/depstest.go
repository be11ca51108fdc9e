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
			require.False(t, p == b || strings.HasPrefix(p, b+"/"), "%s links %s", who, p)
		}
	}
}
