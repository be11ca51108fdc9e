package config_test

import (
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/config"
)

// TestUpstreamCommandQuoting: a COMMAND is split like a shell splits it,
// from a flag and from the file alike (one reading, upstream.SplitCommand),
// and one that does not split is a problem that names the upstream.
func TestUpstreamCommandQuoting(t *testing.T) {
	t.Parallel()
	s, err := config.LoadServe([]string{"--upstream", `files=mcp-files --root "/srv/my docs"`}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, []string{"mcp-files", "--root", "/srv/my docs"}, s.Upstreams[0].Argv())

	cfg, _ := writeConfig(t, "upstreams:\n  - \"files=mcp-files --root '/srv/my docs'\"\n  - {name: b, command: \"run 'x y'\", args: [\"a b\"]}\n")
	s, err = config.LoadServe([]string{"--config", cfg}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, []string{"mcp-files", "--root", "/srv/my docs"}, s.Upstreams[0].Argv())
	require.Equal(t, []string{"run", "x y", "a b"}, s.Upstreams[1].Argv())

	_, err = config.LoadServe([]string{"--upstream", `files=mcp-files --root "/srv/my docs`}, io.Discard)
	require.ErrorContains(t, err, `config: --upstream: command: unterminated " quote`)
}
