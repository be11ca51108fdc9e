package readmetest

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

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
