package engine_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/watch"
)

// TestWatchFollowsALinkedRegistry: when the registry is a symbolic link to
// a file in another directory, an edit of that file (the link untouched)
// is reloaded: the target's directory is watched too.
func TestWatchFollowsALinkedRegistry(t *testing.T) {
	t.Parallel()
	f := newWatchFixture(t, map[string]string{"grant.rego": hideReport})
	target := filepath.Join(t.TempDir(), "registry.yaml")
	f.write(target, testRegistry)
	require.NoError(t, os.Remove(f.registry))
	require.NoError(t, os.Symlink(target, f.registry))
	f.start(watch.Options{Debounce: 5 * time.Millisecond, Settle: time.Millisecond})
	require.Equal(t, allButReport, f.granted())

	f.write(target, strings.Replace(testRegistry, "name: execUrl", "name: runUrl", 1))
	f.waitGranted([]string{"echo", "getReward", "runUrl"})
}
