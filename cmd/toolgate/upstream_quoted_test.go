package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/testkit/conformance"
)

// TestE2EUpstreamFlagQuoted: the command of --upstream NAME=COMMAND is
// split like a shell splits it, quotes included, by the binary too (issue
// 12): an upstream whose program lives under a directory with a space in
// its name starts when the path is quoted, and its tools answer.
func TestE2EUpstreamFlagQuoted(t *testing.T) {
	skipShort(t)
	t.Parallel()
	built := upstreamBinary(t)
	dir := t.TempDir()
	spaced := filepath.Join(dir, "my docs")
	require.NoError(t, os.Mkdir(spaced, 0o755))
	bin, err := os.ReadFile(built)
	require.NoError(t, err)
	prog := filepath.Join(spaced, "upstream test")
	require.NoError(t, os.WriteFile(prog, bin, 0o755))
	regPath, polDir := writeExample(t, dir, &conformance.Fixture{Registry: string(toolgate.ExampleRegistry()) + `
  - name: upHello
    method: upstream:up/hello
    arguments:
      - { name: name, type: string, required: true }
`})
	// Quoted the two ways a shell knows, with a quoted argument after.
	s := serveHTTP(t, "--registry", regPath, "--policy", polDir, "--tokens", writeTokens(t),
		"--upstream", `up="`+prog+`" -stage-file 'no such dir/stage'`)
	admin := s.connect(t, adminToken, "2025-11-25", nil)
	require.Equal(t, ok("hello, ann"), call(t, admin, "upHello", map[string]any{"name": "ann"}, nil))
}
