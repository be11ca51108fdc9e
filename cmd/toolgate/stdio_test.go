package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/testkit/conformance"
	"github.com/toolgate/toolgate/internal/testkit/proctest"
)

// toolgateBinary builds the toolgate binary once per test run.
func toolgateBinary(t *testing.T) string {
	t.Helper()
	return proctest.Build(t, "./cmd/toolgate")
}

// writeExample copies the bundled example into dir with a fixture's
// changes, and returns the registry path and the policy directory.
func writeExample(t *testing.T, dir string, f *conformance.Fixture) (string, string) {
	t.Helper()
	reg := toolgate.ExampleRegistry()
	if f.Registry != "" {
		reg = []byte(f.Registry)
	}
	regPath := filepath.Join(dir, "registry.yaml")
	require.NoError(t, os.WriteFile(regPath, reg, 0o644))
	polDir := filepath.Join(dir, "policies")
	require.NoError(t, os.MkdirAll(polDir, 0o755))
	pol := toolgate.ExamplePolicies()
	require.NoError(t, fs.WalkDir(pol, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(pol, p)
		if err == nil {
			err = os.WriteFile(filepath.Join(polDir, p), b, 0o644)
		}
		return err
	}))
	for name, src := range f.Policies {
		require.NoError(t, os.WriteFile(filepath.Join(polDir, name), []byte(src), 0o644))
	}
	return regPath, polDir
}

// TestConformanceOverStdio runs the conformance fixtures (all but those
// needing Go test hooks) against `toolgate serve --stdio` as a subprocess:
// the answer must equal the golden response byte for byte (indented), and
// the audit trail must hold one record per after-hook outcome.
func TestConformanceOverStdio(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary; skipped with -short")
	}
	t.Parallel()
	bin := toolgateBinary(t)
	fixtures, err := conformance.Load(filepath.Join("..", "..", conformance.Dir))
	require.NoError(t, err)
	for _, f := range fixtures {
		if len(f.Hooks) > 0 {
			continue // Go test hooks cannot be given on the command line
		}
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			regPath, polDir := writeExample(t, dir, f)
			auditPath := filepath.Join(dir, "audit.jsonl")
			args := []string{"serve", "--stdio", "--registry", regPath, "--policy", polDir, "--ledger", "memory", "--audit", auditPath, "--no-watch"}
			if f.Caller != nil {
				args = append(args, "--as", f.Caller.Subject)
				for _, r := range f.Caller.Roles {
					args = append(args, "--role", r)
				}
			}
			cmd := exec.Command(bin, args...)
			stdin, err := cmd.StdinPipe()
			require.NoError(t, err)
			stdout, err := cmd.StdoutPipe()
			require.NoError(t, err)
			stderr := &proctest.Buffer{}
			cmd.Stderr = stderr
			require.NoError(t, cmd.Start())
			lines := bufio.NewReader(stdout)
			send := func(msg string) {
				_, err := io.WriteString(stdin, msg+"\n")
				require.NoError(t, err)
			}
			read := func(id int) []byte {
				for {
					line, err := lines.ReadBytes('\n')
					require.NoError(t, err, "stderr:\n%s", stderr.String())
					var m struct {
						ID *int `json:"id"`
					}
					if json.Unmarshal(line, &m) == nil && m.ID != nil && *m.ID == id {
						return bytes.TrimSpace(line)
					}
				}
			}
			send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"fixture","version":"1"}}}`)
			read(0)
			send(`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`)
			send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + f.Params + `}`)
			resp := read(1)
			require.NoError(t, stdin.Close())
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				require.NoError(t, err, "stderr:\n%s", stderr.String())
			case <-time.After(time.Minute): // a failure bound only
				_ = cmd.Process.Kill()
				t.Fatalf("toolgate serve --stdio did not exit after stdin closed")
			}
			var got bytes.Buffer
			require.NoError(t, json.Indent(&got, resp, "", "  "))
			// Approval ids are random here, predictable in the fixtures.
			require.Equal(t, maskApprovalIDs(f.Response), maskApprovalIDs(got.String()), "%s\n%s", f.Path, f.Comment)

			// The audit trail has one record per after-hook outcome.
			data, err := os.ReadFile(auditPath)
			require.NoError(t, err)
			outcomes := []string{}
			for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
				if len(line) == 0 {
					continue
				}
				var rec struct {
					Outcome string `json:"outcome"`
				}
				require.NoError(t, json.Unmarshal(line, &rec))
				outcomes = append(outcomes, rec.Outcome)
			}
			require.Equal(t, f.After, outcomes, "audit records")
			require.NotContains(t, stderr.String(), "panic")
		})
	}
}
