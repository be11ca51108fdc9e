package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func runArgs(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), &env{args: args, stdin: strings.NewReader(""), stdout: &out, stderr: &errOut})
	return code, out.String(), errOut.String()
}

// TestBuildCheckTestBundle: `toolgate build` makes a bundle that `check
// --bundle` loads and `test` runs the tests of; what does not load makes
// no bundle.
func TestBuildCheckTestBundle(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pol := filepath.Join(dir, "policies")
	require.NoError(t, os.MkdirAll(pol, 0o755))
	for _, src := range []string{"../../rego", "../../policy-tests"} {
		// policy-tests holds the tests' fixture too (fixtures/bundled/data.json).
		require.NoError(t, os.CopyFS(pol, os.DirFS(src)))
	}
	out := filepath.Join(dir, "b.tar.gz")
	code, stdout, stderr := runArgs(t, "build", "--registry", "../../example/registry.yaml", "--policy", pol, "-o", out, "--revision", "rev-7")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "wrote "+out)

	code, stdout, stderr = runArgs(t, "check", "--bundle", out)
	require.Equal(t, 0, code, stdout+stderr)
	require.Contains(t, stdout, "ok: no errors")

	code, stdout, stderr = runArgs(t, "test", out)
	require.Equal(t, 0, code, stdout+stderr)
	require.Contains(t, stdout, "PASS")

	code, _, stderr = runArgs(t, "check", "--bundle", out, "--policy", pol)
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "not both")

	require.NoError(t, os.WriteFile(filepath.Join(pol, "broken.rego"), []byte("package toolgate.grant\n\nx := y\n"), 0o644))
	bad := filepath.Join(dir, "bad.tar.gz")
	code, _, stderr = runArgs(t, "build", "--policy", pol, "-o", bad)
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "broken.rego")
	require.NoFileExists(t, bad)
}
