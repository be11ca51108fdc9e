package bundle_test

import (
	"bytes"
	"context"
	"io/fs"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/runtime/bundle"
	"github.com/toolgate/toolgate/internal/testkit/bundletest"
)

// lockedBuffer is a log destination safe for the downloader's goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// fileBomb is a readable bundle of revision "bomb" padded past
// MaxBundleBytes unpacked: a few hundred KiB on disk.
func fileBomb(t *testing.T) []byte {
	t.Helper()
	ok := build(t, bundletest.Example(t, grantEcho), bundle.BuildOptions{Revision: "bomb"})
	raw := bundletest.Bomb(t, ok, bundle.MaxBundleBytes/(15<<20)+1, 15<<20)
	require.Less(t, len(raw), 1<<20, "the bomb is small on disk")
	return raw
}

// TestOpenFileBoundedWhole: a bundle file (`toolgate check --bundle`,
// `explain`, `test`) is bounded as a whole as a download is: OPA's reader
// holds every file in memory, so a gzip bomb of files each under the
// per-file limit is refused before it is unpacked, with the file named.
func TestOpenFileBoundedWhole(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "bomb.tar.gz")
	require.NoError(t, os.WriteFile(path, fileBomb(t), 0o600))
	src, err := bundle.OpenFile(path, bundle.Signing{})
	require.Error(t, err, "a bundle of %d MiB unpacked was read as revision %q", bundle.MaxBundleBytes>>20+15, src.Revision)
	require.ErrorIs(t, err, bundle.ErrTooLarge)
	require.Contains(t, err.Error(), path)
	require.Contains(t, err.Error(), "larger than 64 MiB unpacked")

	// Packed: a file over the bound is not read whole either.
	big := filepath.Join(t.TempDir(), "big.tar.gz")
	f, err := os.Create(big)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(bundle.MaxBundleBytes+1)) // sparse
	require.NoError(t, f.Close())
	_, err = bundle.OpenFile(big, bundle.Signing{})
	require.ErrorIs(t, err, bundle.ErrTooLarge)
	require.Contains(t, err.Error(), "larger than 64 MiB")
}

// TestPersistedBundleBoundedWhole: the last good bundle read back from the
// state directory at start is bounded as a download is. One over the bound
// is not usable: the server logs why and downloads, as when there is none;
// with the bundle server down too, it does not start.
func TestPersistedBundleBoundedWhole(t *testing.T) {
	t.Parallel()
	srv := bundletest.NewServer(build(t, bundletest.Example(t, ""), bundle.BuildOptions{Revision: "r1"}))
	hs := httptest.NewServer(srv)
	defer hs.Close()
	cfg := bundle.Config{URL: hs.URL + "/b.tar.gz"}
	state := t.TempDir()
	c, err := bundle.New(cfg, bundle.Options{StateDir: state})
	require.NoError(t, err)
	_, err = c.Initial(context.Background())
	require.NoError(t, err)

	var persisted string
	require.NoError(t, filepath.WalkDir(state, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == "bundle.tar.gz" {
			persisted = p
		}
		return err
	}))
	require.NotEmpty(t, persisted)
	require.NoError(t, os.WriteFile(persisted, fileBomb(t), 0o600))
	srv.Set(build(t, bundletest.Example(t, ""), bundle.BuildOptions{Revision: "r2"}))

	var log lockedBuffer
	c, err = bundle.New(cfg, bundle.Options{StateDir: state, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	require.NoError(t, err)
	src, err := c.Initial(context.Background())
	require.NoError(t, err)
	require.Equal(t, "r2", src.Revision, "the persisted bomb served")
	require.False(t, c.Status().Persisted)
	require.Contains(t, log.String(), "the persisted bundle is not usable; downloading")
	require.Contains(t, log.String(), "larger than 64 MiB unpacked")

	// The download replaced the bomb; put it back and take the server down.
	require.NoError(t, os.WriteFile(persisted, fileBomb(t), 0o600))
	hs.Close()
	c, err = bundle.New(cfg, bundle.Options{StateDir: state})
	require.NoError(t, err)
	src, err = c.Initial(context.Background())
	require.Error(t, err, "the persisted bomb served as revision %q", src.Revision)
	require.Contains(t, err.Error(), "no persisted bundle and the download failed")
}
