package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOperatorFilesBoundedEverywhere: every command that reads an
// operator file (registry, policies, data, tokens, config, capabilities,
// callers) refuses one that is not a regular file of at most 16 MiB with
// an error naming it, never a crash or a hang.
func TestOperatorFilesBoundedEverywhere(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	reg := filepath.Join(dir, "registry.yaml")
	require.NoError(t, os.WriteFile(reg, []byte("tools:\n  - { name: echo, method: demo.echo }\n"), 0o600))
	good := filepath.Join(dir, "good")
	require.NoError(t, os.Mkdir(good, 0o755))
	zeroDir := filepath.Join(dir, "zero")
	require.NoError(t, os.Mkdir(zeroDir, 0o755))
	require.NoError(t, os.Symlink("/dev/zero", filepath.Join(zeroDir, "grant.rego")))
	fifo := filepath.Join(dir, "fifo.yaml")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	big := filepath.Join(dir, "big.yaml")
	require.NoError(t, os.WriteFile(big, bytes.Repeat([]byte("#"), 16<<20+1), 0o600))

	serve := func(args ...string) []string {
		return append([]string{"serve", "--http", "127.0.0.1:0", "--ledger", "memory", "--no-watch"}, args...)
	}
	for _, tc := range []struct {
		name   string
		args   []string
		naming string
	}{
		{"serve registry /dev/zero", serve("--registry", "/dev/zero", "--policy", good), "/dev/zero"},
		{"serve registry FIFO", serve("--registry", fifo, "--policy", good), fifo},
		{"serve registry directory", serve("--registry", dir, "--policy", good), dir},
		{"serve registry over 16 MiB", serve("--registry", big, "--policy", good), big},
		{"serve policy symlink to /dev/zero", serve("--registry", reg, "--policy", zeroDir), "grant.rego"},
		{"serve tokens /dev/zero", serve("--registry", reg, "--policy", good, "--tokens", "/dev/zero"), "/dev/zero"},
		{"serve tokens FIFO", serve("--registry", reg, "--policy", good, "--tokens", fifo), fifo},
		{"serve config /dev/zero", serve("--config", "/dev/zero"), "/dev/zero"},
		{"serve config FIFO", serve("--config", fifo), fifo},
		{"serve capabilities /dev/zero", serve("--registry", reg, "--policy", good, "--capabilities", "/dev/zero"), "/dev/zero"},
		{"test policy symlink to /dev/zero", []string{"test", zeroDir}, "grant.rego"},
		{"test FIFO named", []string{"test", fifo}, fifo},
		{"check registry /dev/zero", []string{"check", "--registry", "/dev/zero", "--policy", good}, "/dev/zero"},
		{"check policy symlink to /dev/zero", []string{"check", "--registry", reg, "--policy", zeroDir}, "grant.rego"},
		{"check callers /dev/zero", []string{"check", "--registry", reg, "--policy", good, "--callers", "/dev/zero"}, "/dev/zero"},
		{"explain policy symlink to /dev/zero", []string{"explain", "--registry", reg, "--policy", zeroDir}, "grant.rego"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), &env{args: tc.args, stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr})
			out := stdout.String() + stderr.String()
			require.NotZero(t, code, out)
			require.Contains(t, out, tc.naming, "the error names the file")
			require.Regexp(t, `not a regular file|larger than`, out)
		})
	}
}
