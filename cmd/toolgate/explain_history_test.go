package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestExplainHistory: `explain --history` gives the caller's history like
// any other input: --input prints it as input.history (at most the
// registry's max; an empty one when none is given), and the explanation
// decides with it — the read-before-delete rule denies without the read
// and lets the call run after it. A registry without history refuses
// --history: no policy could see it.
func TestExplainHistory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pol := filepath.Join(dir, "rego")
	require.NoError(t, os.MkdirAll(pol, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(pol, "history.rego"), []byte(historyPolicy), 0o600))
	reg := filepath.Join(dir, "registry.yaml")
	require.NoError(t, os.WriteFile(reg, []byte(strings.Replace(historyRegistry, "max: 100", "max: 2", 1)), 0o600))
	explain := func(want int, args ...string) (string, string) {
		var out, errOut bytes.Buffer
		code := run(context.Background(), &env{args: append([]string{"explain", "--registry", reg, "--policy", pol, "--as", "ann", "--role", "admin"}, args...),
			stdin: strings.NewReader(""), stdout: &out, stderr: &errOut})
		require.Equal(t, want, code, "stdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
		return out.String(), errOut.String()
	}
	read := `{"tool":"read_record","at":"2026-01-01T12:00:00Z","outcome":"result","arguments":{"text":"r7"}}`
	other := `{"tool":"read_record","at":"2026-01-01T11:00:00Z","outcome":"result","arguments":{"text":"r8"}}`
	oldest := `{"tool":"pay","at":"2026-01-01T10:00:00Z","outcome":"failed","arguments":{}}`

	out, _ := explain(0, "--tool", "delete_record", "--args", `{"text":"r7"}`, "--input")
	var doc struct {
		History []map[string]any `json:"history"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	require.NotNil(t, doc.History, "input.history is there, empty: nothing given")
	assert.Empty(t, doc.History)

	out, _ = explain(0, "--tool", "delete_record", "--args", `{"text":"r7"}`, "--input", "--history", "["+read+","+other+","+oldest+"]")
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	assert.Equal(t, []map[string]any{
		{"tool": "read_record", "at": "2026-01-01T12:00:00Z", "outcome": "result", "arguments": map[string]any{"text": "r7"}},
		{"tool": "read_record", "at": "2026-01-01T11:00:00Z", "outcome": "result", "arguments": map[string]any{"text": "r8"}},
	}, doc.History, "at most max entries, newest first, at in RFC 3339 UTC")

	out, _ = explain(0, "--tool", "delete_record", "--args", `{"text":"r7"}`, "--format", "json", "--history", "["+other+"]")
	assert.Contains(t, out, "read the record before deleting it")
	out, _ = explain(0, "--tool", "delete_record", "--args", `{"text":"r7"}`, "--format", "json", "--history", "["+read+"]")
	assert.NotContains(t, out, "read the record before deleting it")

	_, errOut := explain(2, "--tool", "delete_record", "--history", `[{"tool":"x"}]`)
	assert.Contains(t, errOut, "--history: entry 0: tool, at and outcome are required")
	_, errOut = explain(2, "--tool", "delete_record", "--history", `[{"tool":"x","at":"2026-01-01T10:00:00Z","outcome":"result","args":{}}]`)
	assert.Contains(t, errOut, "--history: want a JSON array")
	_, errOut = explain(2, "--history", "[]")
	assert.Contains(t, errOut, "--history and --ledger need --tool")

	var out2, errOut2 bytes.Buffer
	code := run(context.Background(), &env{args: []string{"explain", "--registry", "../../example/registry.yaml", "--policy", "../../rego", "--as", "ann", "--tool", "echo", "--history", "[]"},
		stdin: strings.NewReader(""), stdout: &out2, stderr: &errOut2})
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut2.String(), "the registry keeps no history")
}
