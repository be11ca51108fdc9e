package main

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/testkit/proctest"
)

// TestEmbedRuns builds the example and talks MCP to it over stdio, as a
// contractor: it lists both tools, reads a reward, is refused the
// deletion by the policy, and the audit trail has both calls once the
// program has exited.
func TestEmbedRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a program")
	}
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a failure bound only
	defer cancel()
	bin := proctest.Build(t, "./example/embed")

	cmd := exec.Command(bin, "--as", "cid", "--role", "contractor")
	stderr := &proctest.Buffer{}
	cmd.Stderr = stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "embed-test"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)

	list, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	require.Equal(t, []string{"getReward", "deleteReward"}, names)

	text := func(name string) (string, bool) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{"idReward": 7}})
		require.NoError(t, err)
		return res.Content[0].(*mcp.TextContent).Text, res.IsError
	}
	got, isErr := text("getReward")
	require.False(t, isErr, got)
	require.JSONEq(t, `{"id":7,"points":70,"label":"reward 7"}`, got)
	got, isErr = text("deleteReward")
	require.True(t, isErr)
	require.Contains(t, got, "Contractors cannot delete rewards.")

	require.NoError(t, cs.Close()) // closes stdin; the program exits
	require.Contains(t, stderr.String(), `"tool":"getReward"`)
	require.Contains(t, stderr.String(), `"tool":"deleteReward"`)

	// Piped: the request, then end of input at once (`printf ... | embed`).
	// The answer is written before the program exits, every time
	// (toolgate's TestServeAnswersBeforeEOF runs the same 100 times
	// in-process).
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"me","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"getReward","arguments":{"idReward":7}}}`,
	}, "\n") + "\n"
	for i := range 10 {
		cmd := exec.CommandContext(ctx, bin, "--as", "cid", "--role", "contractor")
		cmd.Stdin = strings.NewReader(in)
		out, err := cmd.Output()
		require.NoError(t, err, "run %d", i)
		require.Contains(t, string(out), `"id":2,"result":{"content":[{"type":"text","text":"{\"id\":7,\"points\":70,\"label\":\"reward 7\"}"}]`,
			"run %d: the answer to the piped request", i)
	}
}
