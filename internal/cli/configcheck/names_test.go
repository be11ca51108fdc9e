package configcheck

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/inspect"
)

// TestCheckConfigNames: check --config reports the files, variables and
// commands the file names that are not there, naming them and never a
// value; what is there is not reported.
func TestCheckConfigNames(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tokens.yaml"), []byte("tokens: []\n"), 0o600))
	t.Setenv("TOOLGATE_CHECK_SET", "s3cret-value")
	t.Setenv("TOOLGATE_CHECK_UNSET", "")
	os.Unsetenv("TOOLGATE_CHECK_UNSET")
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(text), 0o600))
		return p
	}
	broken := write("broken.yaml", `tokens: missing-tokens.yaml
shadow: { policy: no-such-dir }
upstreams:
  - name: fs
    command: toolgate-no-such-command --flag
    env: { API_TOKEN: "${TOOLGATE_CHECK_UNSET}", OK: "${TOOLGATE_CHECK_SET}" }
  - name: web
    url: https://web.example/mcp?key=${TOOLGATE_CHECK_UNSET_URL}
    headers: { Authorization: "Bearer ${file:`+filepath.Join(dir, "no-such-secret")+`}" }
`)
	rep := inspect.Check(context.Background(), inspect.CheckOptions{Source: source(twoTools, nil), Config: File(broken)})
	var out strings.Builder
	require.NoError(t, rep.WriteText(&out))
	assert.NotContains(t, out.String(), "s3cret-value")
	assert.Equal(t, []string{
		"config_missing: " + broken + ": tokens: file " + filepath.Join(dir, "missing-tokens.yaml") + " does not exist: serve refuses to start",
		"config_missing: " + broken + ": shadow.policy: directory " + filepath.Join(dir, "no-such-dir") + " does not exist: serve refuses to start",
		"config_missing: " + broken + ": upstreams[0] (fs).env.API_TOKEN: environment variable TOOLGATE_CHECK_UNSET is not set: serve refuses to start; set it in serve's environment",
		"config_missing: " + broken + ": upstreams[1] (web).url: environment variable TOOLGATE_CHECK_UNSET_URL is not set: serve refuses to start; set it in serve's environment",
		"config_missing: " + broken + ": upstreams[1] (web).headers.Authorization: file " + filepath.Join(dir, "no-such-secret") + ": no such file or directory: serve refuses to start; fix the reference",
	}, findings(rep.Errors, inspect.CodeConfigMissing))
	assert.Equal(t, []string{
		"config_missing: " + broken + ": upstreams[0] (fs).command: command \"toolgate-no-such-command\" is not on PATH here: serve starts without this upstream and its tools; install it or give its full path",
	}, findings(rep.Warnings, inspect.CodeConfigMissing))

	sh, err := os.Executable() // an executable file every run has
	require.NoError(t, err)
	fine := write("fine.yaml", "tokens: tokens.yaml\nupstreams:\n  - name: fs\n    command: "+sh+"\n    env: { OK: \"${TOOLGATE_CHECK_SET}\" }\n")
	rep = inspect.Check(context.Background(), inspect.CheckOptions{Source: source(twoTools, nil), Config: File(fine)})
	assert.Empty(t, findings(rep.Errors, inspect.CodeConfigMissing))
	assert.Empty(t, findings(rep.Warnings, inspect.CodeConfigMissing))
}
