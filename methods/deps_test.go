package methods_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/testkit/depstest"
)

// TestMethodsLinkNoPolicyEngine: binding Go functions as methods needs the
// go-sdk's result type and the vocabulary, not OPA nor the adapter.
func TestMethodsLinkNoPolicyEngine(t *testing.T) {
	t.Parallel()
	deps := depstest.Deps(t)
	require.Contains(t, deps, "github.com/toolgate/toolgate/methods", "the listing is the methods package's")
	depstest.RefusePrefixes(t, deps, "methods", "github.com/open-policy-agent")
	for _, p := range deps {
		if strings.HasPrefix(p, "github.com/toolgate/toolgate/") {
			require.Contains(t, []string{"github.com/toolgate/toolgate/methods", "github.com/toolgate/toolgate/toolcall"}, p, "methods links %s", p)
		}
	}
}
