package readmetest

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// tablePackages are the package paths a package table names: the
// backquoted names in the first column of the table headed "| package |
// what |"; "`toolgate` (the root)" is ".".
func tablePackages(readme string) ([]string, error) {
	return tableHeaded(readme, "| package | what |")
}

// tableHeaded is tablePackages for the table with the given header line.
func tableHeaded(readme, header string) ([]string, error) {
	lines := strings.Split(readme, "\n")
	start := slices.Index(lines, header)
	if start < 0 {
		return nil, fmt.Errorf("no table headed %q", header)
	}
	name := regexp.MustCompile("`([^`]+)`")
	var out []string
	for _, l := range lines[start+2:] {
		if !strings.HasPrefix(l, "|") {
			break
		}
		first := strings.SplitN(strings.TrimPrefix(l, "|"), "|", 2)[0]
		for _, m := range name.FindAllStringSubmatch(first, -1) {
			if m[1] == "toolgate" && strings.Contains(first, "(the root)") {
				out = append(out, ".")
				continue
			}
			out = append(out, m[1])
		}
	}
	return out, nil
}

// treePackages are the directories of the module that hold Go files, as
// `go list ./...` lists them (a directory of tests only is a package too),
// testdata and dot directories aside.
func treePackages(root string) ([]string, error) {
	seen := map[string]bool{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			n := d.Name()
			if p != root && (n == "testdata" || n == "node_modules" || strings.HasPrefix(n, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(p, ".go") {
			rel, err := filepath.Rel(root, filepath.Dir(p))
			if err != nil {
				return err
			}
			seen[filepath.ToSlash(rel)] = true
		}
		return nil
	})
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	slices.Sort(out)
	return out, err
}

// TestReadmePackageTable: the package tables of docs/embedding.md (the
// library's and the internal packages') name every package of the tree that
// a reader may meet, and nothing that is not there. Packages
// under another package's internal/ directory and the binary's and
// examples' packages are the only ones they may leave out.
func TestReadmePackageTable(t *testing.T) {
	root := checkout(t)
	b, err := os.ReadFile(filepath.Join(root, "docs", "embedding.md"))
	require.NoError(t, err)
	table, err := tablePackages(string(b))
	require.NoError(t, err)
	internal, err := tableHeaded(string(b), "| internal package | what |")
	require.NoError(t, err)
	table = append(table, internal...)
	tree, err := treePackages(root)
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, p := range table {
		require.False(t, seen[p], "docs/embedding.md's package table names %s twice", p)
		seen[p] = true
		require.Contains(t, tree, p, "docs/embedding.md's package table names %s, which is not a package of the tree", p)
	}
	for _, p := range tree {
		exempt := strings.HasPrefix(p, "cmd/") || strings.HasPrefix(p, "example/") ||
			(strings.Contains(p, "/internal/") && !strings.HasPrefix(p, "internal/"))
		if !exempt {
			require.Contains(t, table, p, "package %s is missing from docs/embedding.md's package table", p)
		}
	}
}

// TestPackageTableCheckFails: a table that lacks a package or names one the
// tree does not have is told apart from one that matches.
func TestPackageTableCheckFails(t *testing.T) {
	got, err := tablePackages("x\n| package | what |\n| --- | --- |\n| `a`, `b/c` | x |\n| `toolgate` (the root) | y |\n\nafter\n| `z` | no |\n")
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b/c", "."}, got)
	_, err = tablePackages("no table")
	require.Error(t, err)
}
