package main

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestE2EStdioPipedFromFile: requests piped in whole (`printf ... | toolgate
// serve --stdio`) are all answered before the server exits at the end of
// its input, slow ones too; the go-sdk alone would cancel them at EOF.
func TestE2EStdioPipedFromFile(t *testing.T) {
	skipShort(t)
	t.Parallel()
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"me","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"piped"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":200}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"execUrl","arguments":{"url":"https://example.com"}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/list"}`,
	}, "\n") + "\n"
	cmd := exec.Command(toolgateBinary(t), "serve", "--stdio", "--as", "max", "--role", "manager", "--ledger", "memory", "--no-watch")
	cmd.Stdin = strings.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "stderr: %s", stderr.String())

	got := map[int]json.RawMessage{}
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		var m struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &m), "line %q", line)
		got[m.ID] = m.Result
	}
	require.Len(t, got, 5, "every request read is answered: %s", stdout.String())
	require.JSONEq(t, `{"content":[{"type":"text","text":"piped"}]}`, string(got[2]))
	require.JSONEq(t, `{"content":[{"type":"text","text":"200"}]}`, string(got[3]))
	require.JSONEq(t, `{"content":[{"type":"text","text":"Error: Unknown tool 'execUrl'."}],"isError":true}`, string(got[4]))
	require.Contains(t, string(got[5]), `"name":"echo"`)
}
