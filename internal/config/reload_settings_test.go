package config_test

import (
	"io"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/config"
)

// TestCapabilitiesAndListFallback: the settings of docs/contract.md §6 and §11, from
// flags and from a config file (a relative capabilities path is the
// file's), flags winning; an unknown fallback is refused.
func TestCapabilitiesAndListFallback(t *testing.T) {
	t.Parallel()
	path, dir := writeConfig(t, "capabilities: caps.json\nlistFallback: none\n")
	s, err := config.LoadServe([]string{"--config", path, "--ledger", "memory"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "caps.json"), s.Capabilities)
	require.Equal(t, config.ListFallbackNone, s.ListFallback)

	s, err = config.LoadServe([]string{"--config", path, "--ledger", "memory", "--list-fallback", "base", "--capabilities", "/etc/caps.json"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, "/etc/caps.json", s.Capabilities)
	require.Equal(t, config.ListFallbackBase, s.ListFallback)

	s, err = config.LoadServe([]string{"--ledger", "memory"}, io.Discard)
	require.NoError(t, err)
	require.Empty(t, s.ListFallback, "the default: the base decision")

	_, err = config.LoadServe([]string{"--ledger", "memory", "--list-fallback", "hidden"}, io.Discard)
	require.ErrorContains(t, err, `--list-fallback: want base or none, got "hidden"`)
}
