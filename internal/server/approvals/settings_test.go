package approvals_test

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/server/approvals"
)

// TestOptionsEmbedSettings: the gate's settings are declared once. Options
// embeds Settings, and no other field of Options has the name of a
// setting, so a setting is not typed again beside it.
func TestOptionsEmbedSettings(t *testing.T) {
	t.Parallel()
	settings := map[string]bool{}
	for f := range reflect.TypeFor[approvals.Settings]().Fields() {
		settings[f.Name] = true
	}
	require.NotEmpty(t, settings)
	embedded := false
	for f := range reflect.TypeFor[approvals.Options]().Fields() {
		if f.Anonymous && f.Type == reflect.TypeFor[approvals.Settings]() {
			embedded = true
			continue
		}
		require.False(t, settings[f.Name], "Options.%s types a setting again", f.Name)
	}
	require.True(t, embedded, "Options embeds Settings")
}
