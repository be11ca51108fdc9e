package engine_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPolicyModules: the revision's modules are the policies' rules as
// written, by file, without the copies the engine adds to tell which rule
// produced what.
func TestPolicyModules(t *testing.T) {
	t.Parallel()
	e := newEngine(t, map[string]string{"grant.rego": "package toolgate.grant\n\ndefault granted := set()\n\ngranted := {\"echo\"} if \"user\" in input.caller.roles\n"})
	mods := e.Current().PolicyModules()
	require.Len(t, mods, 1)
	for file, m := range mods {
		assert.Contains(t, file, "grant.rego")
		assert.Equal(t, "data.toolgate.grant", m.Package.Path.String())
		require.Len(t, m.Rules, 2, "the two rules written, no copy")
		assert.True(t, m.Rules[0].Default)
		//lint:ignore SA1019 the dotted path is what the test compares
		assert.Equal(t, "data.toolgate.grant.granted", m.Rules[1].Path().String())
	}
}
