package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/runtime/bundle"
	"github.com/toolgate/toolgate/internal/testkit/bundletest"
)

// TestCheckBundleBoundedWhole: `toolgate check --bundle FILE` and `toolgate
// test FILE` of a gzip bomb (a readable bundle padded with files each under
// the per-file limit, a few hundred KiB on disk) fail naming the file and
// the bound, without holding the bundle unpacked.
func TestCheckBundleBoundedWhole(t *testing.T) {
	t.Parallel()
	var ok bytes.Buffer
	require.NoError(t, bundle.Build(context.Background(), &ok, bundletest.Example(t, ""), bundle.BuildOptions{Revision: "bomb"}))
	path := filepath.Join(t.TempDir(), "bomb.tar.gz")
	require.NoError(t, os.WriteFile(path, bundletest.Bomb(t, ok.Bytes(), bundle.MaxBundleBytes/(15<<20)+1, 15<<20), 0o600))

	code, stdout, stderr := runArgs(t, "check", "--bundle", path)
	require.Equal(t, 2, code, stdout+stderr)
	require.Contains(t, stderr, "toolgate check: bundle "+path+": ")
	require.Contains(t, stderr, "larger than 64 MiB unpacked")

	code, stdout, stderr = runArgs(t, "test", path)
	require.NotEqual(t, 0, code, stdout+stderr)
	require.Contains(t, stderr, "larger than 64 MiB unpacked")
}
