package methods_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMethodsLinkNoPolicyEngine: binding Go functions as methods needs the
// go-sdk's result type and the vocabulary, not OPA nor the adapter. The
// import graph is the go tool's own (`go list -deps`, the package without
// its tests).
func TestMethodsLinkNoPolicyEngine(t *testing.T) {
	t.Parallel()
	goTool, err := exec.LookPath("go") // go test puts its GOROOT/bin first in PATH
	require.NoError(t, err)
	out, err := exec.Command(goTool, "list", "-deps", ".").Output()
	require.NoError(t, err, "go list -deps .")
	deps := strings.Fields(string(out))
	require.Contains(t, deps, "github.com/toolgate/toolgate/methods", "the listing is the methods package's")
	for _, p := range deps {
		require.False(t, strings.HasPrefix(p, "github.com/open-policy-agent/"), "methods links %s", p)
		if strings.HasPrefix(p, "github.com/toolgate/toolgate/") {
			require.Contains(t, []string{"github.com/toolgate/toolgate/methods", "github.com/toolgate/toolgate/toolcall"}, p, "methods links %s", p)
		}
	}
}
