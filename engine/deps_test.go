package engine_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEngineWatchesNoFiles: the engine holds decisions only; file watching
// lives in package watch, so the engine links no fsnotify and no watcher.
// The import graph is the go tool's own (`go list -deps`, the package
// without its tests).
func TestEngineWatchesNoFiles(t *testing.T) {
	t.Parallel()
	goTool, err := exec.LookPath("go") // go test puts its GOROOT/bin first in PATH
	require.NoError(t, err)
	out, err := exec.Command(goTool, "list", "-deps", ".").Output()
	require.NoError(t, err, "go list -deps .")
	deps := strings.Fields(string(out))
	require.Contains(t, deps, "github.com/toolgate/toolgate/engine", "the listing is the engine's")
	for _, p := range deps {
		for _, banned := range []string{
			"github.com/fsnotify/fsnotify",
			"github.com/toolgate/toolgate/internal/runtime/fswatch",
			"github.com/toolgate/toolgate/watch",
		} {
			require.False(t, p == banned || strings.HasPrefix(p, banned+"/"), "the engine links %s", p)
		}
	}
}
