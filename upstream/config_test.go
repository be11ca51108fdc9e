package upstream

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseFlag(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want Config
		err  bool
	}{
		{in: "files=npx -y server-files /tmp", want: Config{Name: "files", Command: []string{"npx", "-y", "server-files", "/tmp"}}},
		{in: "w=http://127.0.0.1:9000/mcp", want: Config{Name: "w", URL: "http://127.0.0.1:9000/mcp"}},
		{in: "w=HTTPS://example.com/mcp", want: Config{Name: "w", URL: "HTTPS://example.com/mcp"}},
		{in: `q=run 'a b' "c \"d\" \\e" f\ g ''`, want: Config{Name: "q", Command: []string{"run", "a b", `c "d" \e`, "f g", ""}}},
		{in: "q=  spaced   out  ", want: Config{Name: "q", Command: []string{"spaced", "out"}}},
		{in: "noequals", err: true},
		{in: "=cmd", err: true},
		{in: "bad/name=cmd", err: true},
		{in: "bad name=cmd", err: true},
		{in: "x=", err: true},
		{in: "x='open", err: true},
		{in: `x="open`, err: true},
		{in: `x=trailing\`, err: true},
		{in: "x=http://", err: true},
		// The reading serve's --upstream has (ParseSettings): a dot
		// separates NAME and TOOL, so no name holds one.
		{in: "a.b=cmd", err: true},
		{in: " padded = cmd ", want: Config{Name: "padded", Command: []string{"cmd"}}},
	} {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			got, err := ParseFlag(tc.in)
			if tc.err {
				require.ErrorIs(t, err, ErrConfig)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestNewPoolRefusesBadConfigs(t *testing.T) {
	t.Parallel()
	_, err := NewPool([]Config{
		{Name: "a", Command: []string{"x"}},
		{Name: "a", URL: "http://h/mcp"},
		{Name: "b"},
		{Name: "c", Command: []string{"x"}, URL: "http://h/mcp"},
	}, nil)
	require.ErrorIs(t, err, ErrConfig)
	// Every problem is reported.
	assert.ErrorContains(t, err, "a configured twice")
	assert.ErrorContains(t, err, "b: neither")
	assert.ErrorContains(t, err, "c: more than one")
}

func TestParseMethod(t *testing.T) {
	t.Parallel()
	s, tool, ok := ParseMethod("upstream:files/read/x")
	assert.True(t, ok)
	assert.Equal(t, "files", s)
	assert.Equal(t, "read/x", tool)
	for _, m := range []string{"demo.echo", "upstream:", "upstream:files", "upstream:/t", "upstream:s/"} {
		_, _, ok := ParseMethod(m)
		assert.False(t, ok, m)
	}
}
