package fsx_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/fsx"
)

// TestOperatorFilesBounded: every kind of file that is not a regular
// file of at most 16 MiB is refused with an error naming it, at once (a
// FIFO without a writer must not block).
func TestOperatorFilesBounded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	big := filepath.Join(dir, "big")
	require.NoError(t, os.WriteFile(big, make([]byte, fsx.MaxFileSize+1), 0o600))
	exact := filepath.Join(dir, "exact")
	require.NoError(t, os.WriteFile(exact, make([]byte, fsx.MaxFileSize), 0o600))
	link := filepath.Join(dir, "zero-link")
	require.NoError(t, os.Symlink("/dev/zero", link))

	for _, tc := range []struct {
		name, path string
		want       error
	}{
		{"dev zero", "/dev/zero", fsx.ErrNotRegular},
		{"symlink to dev zero", link, fsx.ErrNotRegular},
		{"fifo", fifo, fsx.ErrNotRegular},
		{"directory", dir, fsx.ErrNotRegular},
		{"16 MiB + 1", big, fsx.ErrTooLarge},
		{"missing", filepath.Join(dir, "nope"), fs.ErrNotExist},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := fsx.ReadFile(tc.path)
			require.ErrorIs(t, err, tc.want)
			require.Contains(t, err.Error(), tc.path)
		})
	}
	data, err := fsx.ReadFile(exact)
	require.NoError(t, err)
	require.Len(t, data, fsx.MaxFileSize)
}

func TestReadFileFS(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		"ok":  {Data: []byte("hello")},
		"dir": {Mode: fs.ModeDir},
	}
	data, err := fsx.ReadFileFS(fsys, "ok")
	require.NoError(t, err)
	require.Equal(t, "hello", string(data))
	_, err = fsx.ReadFileFS(fsys, "dir")
	require.True(t, errors.Is(err, fsx.ErrNotRegular), "%v", err)
}
