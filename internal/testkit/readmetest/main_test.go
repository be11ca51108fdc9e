package readmetest

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMain removes the binaries goBuild linked once the tests are done.
func TestMain(m *testing.M) {
	code := m.Run()
	buildMu.Lock()
	for _, bin := range buildCache {
		_ = os.RemoveAll(filepath.Dir(bin))
	}
	buildMu.Unlock()
	os.Exit(code)
}
