package toolcall_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/testkit/depstest"
)

// TestVocabularyLinksNoEngineNorSDK: the vocabulary is a leaf. Whoever
// speaks of callers, stages and outcomes (an identity source, an observer,
// a plug-in) links neither OPA nor the MCP go-sdk through it, nor any other
// toolgate package.
func TestVocabularyLinksNoEngineNorSDK(t *testing.T) {
	t.Parallel()
	deps := depstest.Deps(t)
	require.Contains(t, deps, "github.com/toolgate/toolgate/toolcall", "the listing is the vocabulary's")
	depstest.RefusePrefixes(t, deps, "the vocabulary",
		"github.com/open-policy-agent",
		"github.com/modelcontextprotocol",
	)
	for _, p := range deps {
		if p == "github.com/toolgate/toolgate/toolcall" {
			continue
		}
		// Only the standard library otherwise: its paths have no dot in
		// their first element.
		require.NotContains(t, strings.SplitN(p, "/", 2)[0], ".", "the vocabulary links %s", p)
	}
}
