package config_test

import (
	"io"
	"testing"
	"time"

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

// TestUpstreamTimeout: an upstream's timeout is read from the file as a
// duration, bounds its connect attempts (Config.ConnectTimeout), is kept
// when a flag replaces the upstream's command, and must be positive.
func TestUpstreamTimeout(t *testing.T) {
	t.Parallel()
	cfg, _ := writeConfig(t, "upstreams:\n  - {name: files, command: npx -y server-files /tmp, timeout: 5m}\n  - {name: web, url: \"http://127.0.0.1:1/mcp\"}\n")
	s, err := config.LoadServe([]string{"--config", cfg}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, 5*time.Minute, s.Upstreams[0].PoolConfig().ConnectTimeout)
	require.Zero(t, s.Upstreams[1].PoolConfig().ConnectTimeout, "unset: the pool's default")

	s, err = config.LoadServe([]string{"--config", cfg, "--upstream", "files=other-server"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, 5*time.Minute, s.Upstreams[0].Timeout)

	for _, bad := range []string{"0s", "-1m", "5", "soon"} {
		cfg, _ := writeConfig(t, "upstreams:\n  - {name: files, command: srv, timeout: "+bad+"}\n")
		_, err := config.LoadServe([]string{"--config", cfg}, io.Discard)
		require.ErrorContains(t, err, "timeout", bad)
	}
}

// TestStdioListensOnNothingElse: serve --stdio binds no HTTP address from
// the settings file (several stdio sessions share one file), and does with
// --http on its command line.
func TestStdioListensOnNothingElse(t *testing.T) {
	t.Parallel()
	cfg, _ := writeConfig(t, "http: 127.0.0.1:9911\nauth: {issuer: \"https://login.example.com\"}\n")
	s, err := config.LoadServe([]string{"--config", cfg, "--stdio"}, io.Discard)
	require.NoError(t, err, "the file's auth is for its HTTP callers: not an error without them")
	require.Empty(t, s.HTTP)
	require.False(t, s.Auth.Enabled())

	cfg2, _ := writeConfig(t, "http: 127.0.0.1:9911\nstdio: true\n")
	s, err = config.LoadServe([]string{"--config", cfg2}, io.Discard)
	require.NoError(t, err)
	require.Empty(t, s.HTTP, "stdio from the file too")

	s, err = config.LoadServe([]string{"--config", cfg, "--stdio", "--http", "127.0.0.1:9912"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:9912", s.HTTP)
	require.True(t, s.Auth.Enabled())

	s, err = config.LoadServe([]string{"--config", cfg}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:9911", s.HTTP, "without --stdio the file's address serves")
}
