package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestServeAndTestRefuseAlike: a policy directory `toolgate serve` refuses,
// `toolgate test` refuses too, and the other way round, each naming the
// same file, line, column and message (the library-level table is
// policytest's TestServeAndTestLoadAlike).
func TestServeAndTestRefuseAlike(t *testing.T) {
	t.Parallel()
	grant := "package toolgate.grant\n\ngranted := {\"echo\"} if input.caller.subject == \"bob\"\n"
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  []string // what both outputs say, after the policy directory
	}{
		{"network built-in", map[string]string{"grant.rego": "package toolgate.grant\n\ngranted := {\"echo\"} if {\n\thttp.send({\"method\": \"GET\", \"url\": \"http://127.0.0.1:1\"}).status_code == 200\n}\n"},
			[]string{"grant.rego:4:2: ", "undefined function http.send"}},
		{"unsafe variable", map[string]string{"grant.rego": "package toolgate.grant\n\ngranted := {\"echo\"} if x > 1\n"},
			[]string{"grant.rego:3:24: ", "var x is unsafe"}},
		{"rule and data document at one path", map[string]string{"grant.rego": grant, "toolgate/grant/data.json": `{"granted": ["echo"]}`},
			[]string{"grant.rego:3:1: ", "conflicting rule for data path toolgate/grant/granted found"}},
		{"data file not an object", map[string]string{"grant.rego": grant, "data.json": `["echo"]`},
			[]string{"data.json", "data: the document must be an object"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			reg := filepath.Join(dir, "registry.yaml")
			require.NoError(t, os.WriteFile(reg, []byte("tools:\n  - { name: echo, method: demo.echo }\n"), 0o600))
			pol := filepath.Join(dir, "rego")
			for name, content := range tc.files {
				p := filepath.Join(pol, filepath.FromSlash(name))
				require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
				require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
			}
			for _, args := range [][]string{
				{"serve", "--http", "127.0.0.1:0", "--ledger", "memory", "--no-watch", "--registry", reg, "--policy", pol},
				{"test", pol},
			} {
				// A bound on failure only: a serve that loads the directory
				// runs until it ends, and exits 0.
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				var stdout, stderr bytes.Buffer
				code := run(ctx, &env{args: args, stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr})
				out := stdout.String() + stderr.String()
				require.NotZero(t, code, "%s accepts what the other refuses:\n%s", args[0], out)
				for _, w := range tc.want {
					require.Contains(t, out, w, args[0])
				}
				require.Contains(t, out, filepath.Join(pol, ""), args[0])
			}
		})
	}
}
