package toolcall_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestVocabularyLinksNoEngineNorSDK: the vocabulary is a leaf. Whoever
// speaks of callers, stages and outcomes (an identity source, an observer,
// a plug-in) links neither OPA nor the MCP go-sdk through it, nor any other
// toolgate package. The import graph is the go tool's own (`go list
// -deps`, the package without its tests).
func TestVocabularyLinksNoEngineNorSDK(t *testing.T) {
	t.Parallel()
	goTool, err := exec.LookPath("go") // go test puts its GOROOT/bin first in PATH
	require.NoError(t, err)
	out, err := exec.Command(goTool, "list", "-deps", ".").Output()
	require.NoError(t, err, "go list -deps .")
	deps := strings.Fields(string(out))
	require.Contains(t, deps, "github.com/toolgate/toolgate/toolcall", "the listing is the vocabulary's")
	for _, p := range deps {
		require.False(t, strings.HasPrefix(p, "github.com/open-policy-agent/"), "the vocabulary links %s", p)
		require.False(t, strings.HasPrefix(p, "github.com/modelcontextprotocol/"), "the vocabulary links %s", p)
		if p == "github.com/toolgate/toolgate/toolcall" {
			continue
		}
		// Only the standard library otherwise: its paths have no dot in
		// their first element.
		require.NotContains(t, strings.SplitN(p, "/", 2)[0], ".", "the vocabulary links %s", p)
	}
}
