package config_test

import (
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/upstream"
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

// TestUpstreamFlagOneReading: serve's --upstream takes exactly the values
// explain's and init's do (upstream.ParseFlag), and names the same server.
func TestUpstreamFlagOneReading(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		"files=npx -y server-files /tmp", "w=HTTPS://example.com/mcp", " padded = cmd ",
		"a.b=cmd", "bad name=cmd", "x=", "x='open", "x=http://", "noequals",
	} {
		t.Run(in, func(t *testing.T) {
			t.Parallel()
			want, flagErr := upstream.ParseFlag(in)
			s, err := config.LoadServe([]string{"--upstream", in}, io.Discard)
			if flagErr != nil {
				require.Error(t, err, "ParseFlag refuses it: %v", flagErr)
				return
			}
			require.NoError(t, err)
			require.Len(t, s.Upstreams, 1)
			assert.Equal(t, want, s.Upstreams[0].PoolConfig())
		})
	}
}
