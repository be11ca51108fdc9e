package config_test

import (
	"io"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/config"
)

// TestPinsSettings: pin (per upstream, needs import) and pins (the file,
// relative to the config file; --pins wins; default pins.yaml in the
// state directory) (docs/contract.md §15).
func TestPinsSettings(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "/var/lib/state")
	cfg, dir := writeConfig(t, "pins: locks/pins.yaml\nupstreams:\n  - { name: fs, command: fs-server, import: true, pin: true }\n")

	s, err := config.LoadServe([]string{"--config", cfg}, io.Discard)
	require.NoError(t, err)
	require.True(t, s.Upstreams[0].Pin)
	path, err := s.PinsFile()
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "locks", "pins.yaml"), path, "relative to the config file")

	s, err = config.LoadServe([]string{"--config", cfg, "--pins", "/etc/toolgate/pins.yaml", "--upstream", "fs=other-fs-server"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, "/etc/toolgate/pins.yaml", s.Pins)
	require.True(t, s.Upstreams[0].Pin, "--upstream keeps the file's pin")
	require.Equal(t, "other-fs-server", s.Upstreams[0].Command)

	s, err = config.LoadServe(nil, io.Discard)
	require.NoError(t, err)
	path, err = s.PinsFile()
	require.NoError(t, err)
	require.Equal(t, "/var/lib/state/toolgate/pins.yaml", path, "beside the default ledger")

	bad, _ := writeConfig(t, "upstreams:\n  - { name: fs, command: fs-server, pin: true }\n")
	_, err = config.LoadServe([]string{"--config", bad}, io.Discard)
	require.ErrorContains(t, err, "upstreams[0] (fs): pin needs import: true")

	kind, _ := writeConfig(t, "upstreams:\n  - { name: fs, command: fs-server, import: true, pin: yes-please }\n")
	_, err = config.LoadServe([]string{"--config", kind}, io.Discard)
	require.ErrorContains(t, err, "pin: wrong kind of value")
}
