package upstream

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/registry"
)

// TestImportRowRemember: an imported row remembers the arguments its
// upstream's remember names for the tool as the upstream lists it
// (whatever the prefix); a tool it does not name remembers none.
func TestImportRowRemember(t *testing.T) {
	t.Parallel()
	prefix := "s_"
	cfg := &Config{Name: "search", Prefix: &prefix, Remember: map[string][]string{"query": {"q", "page"}}}
	row, _, err := importRow(cfg, mcpTool("query", `{"type":"object","properties":{"q":{"type":"string"},"page":{"type":"integer"}}}`), nil)
	require.NoError(t, err)
	assert.Equal(t, "s_query", row.Name)
	assert.Equal(t, []string{"q", "page"}, row.Remember)
	cfg.Remember["query"][0] = "changed"
	assert.Equal(t, []string{"q", "page"}, row.Remember, "the row keeps its own copy")
	row, _, err = importRow(cfg, mcpTool("other", `{"type":"object"}`), nil)
	require.NoError(t, err)
	assert.Empty(t, row.Remember)
}

// TestSettingsRemember: the settings' remember reaches the pool's
// configuration.
func TestSettingsRemember(t *testing.T) {
	t.Parallel()
	u := Settings{Name: "search", URL: "http://127.0.0.1:1/mcp", Import: true, Remember: map[string][]string{"query": {"q"}}}
	assert.Equal(t, map[string][]string{"query": {"q"}}, u.PoolConfig().Remember)
}

// TestMergeRowsKeepsHistory: the registry with imported rows keeps the
// registry's history setting (without it, no call would be recorded).
func TestMergeRowsKeepsHistory(t *testing.T) {
	t.Parallel()
	reg, err := registry.Parse([]byte("history: {per: 10m, max: 5}\ntools: [{name: t, method: m}]\n"), registry.FormatYAML)
	require.NoError(t, err)
	row, _, err := importRow(&Config{Name: "s", Remember: map[string][]string{"query": {"q"}}}, mcpTool("query", `{"type":"object"}`), nil)
	require.NoError(t, err)
	merged := MergeRows(reg, []registry.Tool{row})
	require.NotNil(t, merged.History)
	assert.Equal(t, registry.History{Per: "10m", Max: 5}, *merged.History)
	require.Len(t, merged.Tools, 2)
	assert.Equal(t, []string{"q"}, merged.Tools[1].Remember)
}
