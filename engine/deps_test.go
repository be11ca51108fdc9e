package engine_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/testkit/depstest"
)

// TestEngineWatchesNoFiles: the engine holds decisions only; file watching
// lives in package watch, so the engine links no fsnotify and no watcher.
func TestEngineWatchesNoFiles(t *testing.T) {
	t.Parallel()
	deps := depstest.Deps(t)
	require.Contains(t, deps, "github.com/toolgate/toolgate/engine", "the listing is the engine's")
	depstest.RefusePrefixes(t, deps, "the engine",
		"github.com/fsnotify/fsnotify",
		"github.com/toolgate/toolgate/internal/runtime/fswatch",
		"github.com/toolgate/toolgate/watch",
	)
}
