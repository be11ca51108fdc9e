package readmetest

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
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

// treePackages are the directories of the module that hold a Go package
// (a non-test .go file), testdata and dot directories aside.
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
		if strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") {
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

// TestReadmePackageTable: the package table of docs/embedding.md is the
// library: it names exactly the packages of the tree outside internal/,
// cmd/ and example/ (the binary's and the examples' code), and the table
// of internal packages names exactly those under internal/. Packages under
// another package's internal/ directory are the only ones both may leave
// out.
func TestReadmePackageTable(t *testing.T) {
	root := checkout(t)
	b, err := os.ReadFile(filepath.Join(root, "docs", "embedding.md"))
	require.NoError(t, err)
	library, err := tablePackages(string(b))
	require.NoError(t, err)
	internal, err := tableHeaded(string(b), "| internal package | what |")
	require.NoError(t, err)
	tree, err := treePackages(root)
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, p := range append(slices.Clone(library), internal...) {
		require.False(t, seen[p], "docs/embedding.md's package tables name %s twice", p)
		seen[p] = true
		require.Contains(t, tree, p, "docs/embedding.md's package tables name %s, which is not a package of the tree", p)
	}
	for _, p := range library {
		require.False(t, isInternal(p) || isBinaryOrExample(p), "docs/embedding.md's library table names %s, which is not importable or not the library", p)
	}
	for _, p := range internal {
		require.True(t, strings.HasPrefix(p, "internal/"), "docs/embedding.md's internal table names %s, which is not under internal/", p)
	}
	for _, p := range tree {
		switch {
		case isBinaryOrExample(p) || (isInternal(p) && !strings.HasPrefix(p, "internal/")):
		case strings.HasPrefix(p, "internal/"):
			require.Contains(t, internal, p, "package %s is missing from docs/embedding.md's internal package table", p)
		default:
			require.Contains(t, library, p, "package %s is importable but missing from docs/embedding.md's library package table", p)
		}
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

// testkitImports are the non-test files outside internal/testkit that
// import a package under it, each as "file imports path".
func testkitImports(root string) ([]string, error) {
	const testkit = "github.com/toolgate/toolgate/internal/testkit"
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			n := d.Name()
			if rel == "internal/testkit" || (p != root && (n == "testdata" || n == "node_modules" || strings.HasPrefix(n, "."))) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, im := range f.Imports {
			path, err := strconv.Unquote(im.Path.Value)
			if err != nil {
				return err
			}
			if path == testkit || strings.HasPrefix(path, testkit+"/") {
				out = append(out, rel+" imports "+path)
			}
		}
		return nil
	})
	return out, err
}

// TestTestkitOnlyInTests: the test machinery under internal/testkit is
// imported by tests (and by itself) only, never by what the binary or the
// library runs.
func TestTestkitOnlyInTests(t *testing.T) {
	got, err := testkitImports(checkout(t))
	require.NoError(t, err)
	require.Empty(t, got, "product code imports internal/testkit")
}

// TestTestkitImportsCheckFails: a product file that imports the test
// machinery is reported; a test file that does is not.
func TestTestkitImportsCheckFails(t *testing.T) {
	root := t.TempDir()
	write := func(name, src string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, name), []byte(src), 0o644))
	}
	write("a/a.go", "package a\n\nimport _ \"github.com/toolgate/toolgate/internal/testkit/proctest\"\n")
	write("a/a_test.go", "package a\n\nimport _ \"github.com/toolgate/toolgate/internal/testkit/pgtest\"\n")
	write("internal/testkit/x/x.go", "package x\n\nimport _ \"github.com/toolgate/toolgate/internal/testkit/proctest\"\n")
	write("b/b.go", "package b\n\nimport _ \"github.com/toolgate/toolgate/internal/testkitten\"\n")
	got, err := testkitImports(root)
	require.NoError(t, err)
	require.Equal(t, []string{"a/a.go imports github.com/toolgate/toolgate/internal/testkit/proctest"}, got)
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
