package fswatch_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/fsnotify/fsnotify"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/runtime/fswatch"
)

// TestRelevant: in the policy tree every event counts but those of hidden
// files and a chmod; in the registry's directory only the registry's.
// ConfigMap machinery ("..data") always counts.
func TestRelevant(t *testing.T) {
	t.Parallel()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	reg := filepath.Join(dir, "registry.yaml")
	pol := filepath.Join(dir, "rego")
	require.NoError(t, os.WriteFile(reg, []byte("tools: []\n"), 0o600))
	require.NoError(t, os.MkdirAll(filepath.Join(pol, "sub"), 0o755))
	w, err := fswatch.New(reg, pol, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = w.Close() })
	require.NoError(t, w.Sync())
	for _, tc := range []struct {
		name string
		op   fsnotify.Op
		want bool
	}{
		{reg, fsnotify.Write, true},
		{reg, fsnotify.Chmod, false},
		{filepath.Join(dir, "notes.txt"), fsnotify.Write, false},
		{filepath.Join(pol, "grant.rego"), fsnotify.Create, true},
		{filepath.Join(pol, "sub", "data.json"), fsnotify.Write, true},
		{filepath.Join(pol, ".grant.rego.swp"), fsnotify.Write, false},
		{filepath.Join(pol, "..data"), fsnotify.Create, true},
		{pol, fsnotify.Remove, true},
		{filepath.Join(t.TempDir(), "grant.rego"), fsnotify.Write, false},
	} {
		require.Equal(t, tc.want, w.Relevant(fsnotify.Event{Name: tc.name, Op: tc.op}), "%s %s", tc.op, tc.name)
	}
}
