package scaffold_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/format"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/toolgate/toolgate/identity"
	"github.com/toolgate/toolgate/internal/cli/scaffold"
	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/server/httpserve"
)

// TestRender: every file of every variant is well-formed: the Rego as
// opa fmt writes it, the YAML parseable, the settings file as serve reads
// it (the upstream's command exactly as given, quotes and all).
func TestRender(t *testing.T) {
	cmd := `node "my server.mjs" --flag 'a b' #not-a-comment`
	for _, opts := range []scaffold.Options{
		{},
		{Role: "dev", Upstream: &scaffold.Upstream{Name: "files", Command: cmd}},
		{Upstream: &scaffold.Upstream{Name: "web", URL: "https://mcp.example.com/mcp?x=1&y=2"}},
	} {
		opts.Tokens = &scaffold.Tokens{User: "user-token", Operator: "operator-token"}
		files, err := scaffold.Render(opts)
		require.NoError(t, err)
		var names []string
		for _, f := range files {
			names = append(names, f.Name)
			switch {
			case strings.HasSuffix(f.Name, ".rego"):
				formatted, err := format.Source(f.Name, f.Data)
				require.NoError(t, err, f.Name)
				require.Equal(t, string(formatted), string(f.Data), "%s is not as opa fmt writes it", f.Name)
			case strings.HasSuffix(f.Name, ".yaml"):
				var doc any
				require.NoError(t, yaml.Unmarshal(f.Data, &doc), "%s:\n%s", f.Name, f.Data)
			}
		}
		require.Equal(t, []string{"policy-tests/call_test.rego", "policy-tests/grant_test.rego", "registry.yaml",
			"rego/call.rego", "rego/grant.rego", "tokens.yaml", "toolgate.yaml"}, names)

		dir := t.TempDir()
		given := *opts.Tokens
		opts.Tokens = nil
		_, err = scaffold.Write(dir, opts)
		require.NoError(t, err)
		opts.Tokens = &given
		s, err := config.LoadFile(filepath.Join(dir, "toolgate.yaml"))
		require.NoError(t, err)
		require.Equal(t, filepath.Join(dir, "registry.yaml"), s.Registry)
		require.Equal(t, filepath.Join(dir, "tokens.yaml"), s.Tokens)
		if opts.Upstream == nil {
			require.Empty(t, s.Upstreams)
		} else {
			require.Len(t, s.Upstreams, 1)
			u := s.Upstreams[0]
			require.Equal(t, opts.Upstream.Name, u.Name)
			require.Equal(t, opts.Upstream.Command, u.Command)
			require.Equal(t, opts.Upstream.URL, u.URL)
			require.True(t, u.Import)
			require.Empty(t, u.Section, "imported closed: the default section upstream:NAME")
			reg, err := os.ReadFile(filepath.Join(dir, "registry.yaml"))
			require.NoError(t, err)
			role := opts.Role
			if role == "" {
				role = scaffold.DefaultRole
			}
			require.Contains(t, string(reg), `"upstream:`+opts.Upstream.Name+`": { roles: [`+role+`] }`)
		}
		tokens, err := identity.LoadTokens(s.Tokens)
		require.NoError(t, err)
		require.Equal(t, 2, tokens.Len())
		_, ok := tokens.Lookup(opts.Tokens.User)
		require.False(t, ok, "Write makes fresh tokens: not the test's")
	}
}

// TestWriteTokens: the tokens file lists the hashes of the tokens given, a
// user's and an operator's (the operator role serve defaults to), and
// never the tokens themselves; without tokens, fresh random ones.
func TestWriteTokens(t *testing.T) {
	require.Equal(t, httpserve.DefaultAdminRole, scaffold.OperatorRole)
	toks, err := scaffold.NewTokens()
	require.NoError(t, err)
	again, err := scaffold.NewTokens()
	require.NoError(t, err)
	require.NotEqual(t, toks.User, toks.Operator)
	require.NotEqual(t, toks.User, again.User, "random, not a published example")
	require.GreaterOrEqual(t, len(toks.User), 40)

	dir := t.TempDir()
	_, err = scaffold.Write(dir, scaffold.Options{Role: "dev", Tokens: toks})
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(dir, "tokens.yaml"))
	require.NoError(t, err)
	require.NotContains(t, string(data), toks.User)
	require.NotContains(t, string(data), toks.Operator)
	tokens, err := identity.LoadTokens(filepath.Join(dir, "tokens.yaml"))
	require.NoError(t, err)
	user, ok := tokens.Lookup(toks.User)
	require.True(t, ok)
	require.Equal(t, "me", user.Subject)
	require.Equal(t, []string{"dev"}, user.Roles)
	op, ok := tokens.Lookup(toks.Operator)
	require.True(t, ok)
	require.Equal(t, "operator", op.Subject)
	require.Equal(t, []string{scaffold.OperatorRole}, op.Roles)
	_, ok = tokens.Lookup("toolgate-example-token")
	require.False(t, ok, "no published token works")
}

// TestWriteRefusesToOverwrite: one existing file and nothing is written.
func TestWriteRefusesToOverwrite(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "registry.yaml"), []byte("mine"), 0o644))
	_, err := scaffold.Write(dir, scaffold.Options{})
	require.ErrorContains(t, err, "registry.yaml already exist")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	b, err := os.ReadFile(filepath.Join(dir, "registry.yaml"))
	require.NoError(t, err)
	require.Equal(t, "mine", string(b))
}

func TestParseUpstream(t *testing.T) {
	u, err := scaffold.ParseUpstream(`files= npx -y "@mcp/server fs" /srv`)
	require.NoError(t, err)
	require.Equal(t, &scaffold.Upstream{Name: "files", Command: `npx -y "@mcp/server fs" /srv`}, u)
	u, err = scaffold.ParseUpstream("web=https://example.com/mcp")
	require.NoError(t, err)
	require.Equal(t, &scaffold.Upstream{Name: "web", URL: "https://example.com/mcp"}, u)
	for _, bad := range []string{"noequals", "bad name=x", "x=", `x="unterminated`, "x=\x94"} {
		_, err := scaffold.ParseUpstream(bad)
		require.Error(t, err, bad)
	}
}
