package readmetest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLibraryIsThePackageTable: the library is what docs/embedding.md's
// package table names, exactly: every package of the tree outside
// internal/ directories, cmd/ and example/ (the binary's and the examples'
// code) is in it, and it names nothing else; the table of internal
// packages names only packages under internal/.
func TestLibraryIsThePackageTable(t *testing.T) {
	root := checkout(t)
	b, err := os.ReadFile(filepath.Join(root, "docs", "embedding.md"))
	require.NoError(t, err)
	library, err := tablePackages(string(b))
	require.NoError(t, err)
	internal, err := tableHeaded(string(b), "| internal package | what |")
	require.NoError(t, err)
	tree, err := treePackages(root)
	require.NoError(t, err)
	var public []string
	for _, p := range tree {
		if !isInternal(p) && !isBinaryOrExample(p) {
			public = append(public, p)
		}
	}
	require.ElementsMatch(t, public, library, "docs/embedding.md's package table is not the library (the importable packages outside cmd/ and example/)")
	for _, p := range internal {
		require.True(t, strings.HasPrefix(p, "internal/"), "docs/embedding.md's internal table names %s, which is not under internal/", p)
	}
}

// isInternal: p is under an internal/ directory, the module's or a
// package's.
func isInternal(p string) bool {
	return strings.HasPrefix(p, "internal/") || strings.Contains(p, "/internal/")
}

// isBinaryOrExample: p is the binary's or an example's code.
func isBinaryOrExample(p string) bool {
	return strings.HasPrefix(p, "cmd/") || strings.HasPrefix(p, "example/")
}
