package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServeSettingsFileIsStrict: `toolgate serve --config` refuses a file
// with an unknown key, naming the key and its line (exit 2, before serving
// anything), and logs a key under its former camelCase name as a warning
// naming the new one.
func TestServeSettingsFileIsStrict(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	dir := t.TempDir()
	serve := func(content string) (int, string) {
		path := filepath.Join(dir, "toolgate.yaml")
		require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
		var out, errOut strings.Builder
		code := run(context.Background(), &env{args: []string{"serve", "--config", path}, stdin: strings.NewReader(""), stdout: &out, stderr: &errOut})
		return code, errOut.String()
	}

	code, stderr := serve("ledger: memory\nhttp: 127.0.0.1:0\nsession_timout: 5m\n")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, `line 3: unknown key "session_timout" (did you mean "session_timeout"? known: registry, policy, `)

	code, stderr = serve("ledger: memory\nsessionTimeout: 5m\nlist_fallback: hidden\n")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, `level=WARN msg="config: sessionTimeout is now named session_timeout; the old name is read until the next release"`)
	assert.Contains(t, stderr, " line=2 key=sessionTimeout\n")
	assert.Contains(t, stderr, `list_fallback: want base or none, got "hidden"`)
}
