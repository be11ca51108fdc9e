package replicatest

import (
	"os"
	"testing"

	"github.com/toolgate/toolgate/internal/testkit/proctest"
)

// TestMain removes the binaries proctest.Build linked once the tests are
// done.
func TestMain(m *testing.M) {
	code := m.Run()
	proctest.RemoveBuilds()
	os.Exit(code)
}
