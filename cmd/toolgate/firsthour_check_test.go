package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestE2EFirstHourCheckFlagsBrokenProjects: toolgate check, run in an init
// project broken the ways a new user breaks one, flags each: a grant
// policy in the wrong package (the hidden tool would reappear silently),
// two complete granted rules that both hold for a role combination check
// lists (they agree on the tools check sees, not on the upstream's), a
// missing tokens file, an unset ${VAR}, a stdio command not on PATH, and
// a misspelt config key; each says what it likely meant or what serve
// would do. The unbroken project checks clean.
func TestE2EFirstHourCheckFlagsBrokenProjects(t *testing.T) {
	skipShort(t)
	t.Parallel()
	bin := toolgateBinary(t)
	up := upstreamBinary(t)
	state := t.TempDir()
	run := func(dir string, args ...string) (string, error) {
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+state, "TOOLGATE_TOKEN=", "TOOLGATE_FIRSTHOUR_UNSET=")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	root := t.TempDir()
	clean := filepath.Join(root, "clean")
	out, err := run(root, "init", clean, "--upstream", "up="+up)
	require.NoError(t, err, out)
	out, err = run(clean, "check")
	require.NoError(t, err, out)
	require.Contains(t, out, "ok: no errors, no warnings")

	edit := func(t *testing.T, file, old, new string) {
		t.Helper()
		b, err := os.ReadFile(file)
		require.NoError(t, err)
		require.Contains(t, string(b), old)
		require.NoError(t, os.WriteFile(file, []byte(strings.Replace(string(b), old, new, 1)), 0o600))
	}
	appendTo := func(t *testing.T, file, text string) {
		t.Helper()
		f, err := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
		require.NoError(t, err)
		_, err = f.WriteString(text)
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}
	for _, tc := range []struct {
		name   string
		break_ func(t *testing.T, dir string)
		fails  bool     // exit 1 (an error), else a warning
		want   []string // in check's output
	}{
		{"grant policy in the wrong package", func(t *testing.T, dir string) {
			edit(t, filepath.Join(dir, "rego", "grant.rego"), "package toolgate.grant\n", "package toolgate.grants\n")
		}, false, []string{"warning rule_unread: rego/grant.rego:", "rule granted in package toolgate.grants is never read", "did you mean package toolgate.grant?"}},
		{"two complete granted rules for one role combination", func(t *testing.T, dir string) {
			appendTo(t, filepath.Join(dir, "rego", "grant.rego"),
				"\ngranted := {t.name | some t in input.tools; t.base} if \"user\" in input.caller.roles\n\ngranted := {\"echo\"} if \"intern\" in input.caller.roles\n")
		}, true, []string{"error   granted_conflict: rego/grant.rego:", "(roles: intern, user): 2 complete granted rules hold for this caller"}},
		{"missing tokens file", func(t *testing.T, dir string) {
			require.NoError(t, os.Remove(filepath.Join(dir, "tokens.yaml")))
		}, true, []string{"error   config_missing: toolgate.yaml: tokens: file ", "tokens.yaml does not exist"}},
		{"unset variable", func(t *testing.T, dir string) {
			edit(t, filepath.Join(dir, "toolgate.yaml"), "    import: true\n", "    import: true\n    env: { API_KEY: \"${TOOLGATE_FIRSTHOUR_UNSET_TOO}\" }\n")
		}, true, []string{"error   config_missing: toolgate.yaml: upstreams[0] (up).env.API_KEY: environment variable TOOLGATE_FIRSTHOUR_UNSET_TOO is not set"}},
		{"stdio command not on PATH", func(t *testing.T, dir string) {
			edit(t, filepath.Join(dir, "toolgate.yaml"), "command: \""+up, "command: \"toolgate-firsthour-no-such-command")
		}, false, []string{"warning config_missing: toolgate.yaml: upstreams[0] (up).command: command \"toolgate-firsthour-no-such-command\" is not on PATH"}},
		{"misspelt config key", func(t *testing.T, dir string) {
			appendTo(t, filepath.Join(dir, "toolgate.yaml"), "sesion_timeout: 1m\n")
		}, true, []string{`unknown key "sesion_timeout" (did you mean "session_timeout"?`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(root, strings.ReplaceAll(tc.name, " ", "-"))
			require.NoError(t, os.CopyFS(dir, os.DirFS(clean)))
			tc.break_(t, dir)
			out, err := run(dir, "check")
			if tc.fails {
				require.Error(t, err, out)
			} else {
				require.NoError(t, err, out)
				assert.NotContains(t, out, "ok: no errors, no warnings")
			}
			for _, w := range tc.want {
				assert.Contains(t, out, w)
			}
		})
	}
}
