package main

//lint:file-ignore SA1019 logging, sampling and roots are deprecated from protocol revision 2026-07-28 on; earlier revisions have them, and toolgate keeps what the server behind it does

import (
	"context"
	"fmt"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/testkit/proctest"
)

// TestPeerRuns builds the example and calls its tool over stdio with the
// go-sdk client: the Go method's progress, log message, elicitation,
// sampling and roots requests reach this client, whose answers make the
// result; the audit trail records the call (docs/contract.md §16).
func TestPeerRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a program")
	}
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a failure bound only
	defer cancel()
	bin := proctest.Build(t, "./example/peer")

	cmd := exec.Command(bin, "--as", "ann")
	stderr := &proctest.Buffer{}
	cmd.Stderr = stderr
	var (
		mu       sync.Mutex
		progress []string
		logs     []string
		gotAll   = make(chan struct{})
	)
	note := func(list *[]string, s string) {
		mu.Lock()
		defer mu.Unlock()
		*list = append(*list, s)
		if len(progress) == 3 && len(logs) == 1 {
			close(gotAll)
		}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "peer-test"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{}},
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Role: "assistant", Model: "test", Content: &mcp.TextContent{Text: "model says: " + req.Params.Messages[0].Content.(*mcp.TextContent).Text}}, nil
		},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"tone": "cheerful"}}, nil
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			note(&progress, fmt.Sprintf("%v/%v %s", req.Params.Progress, req.Params.Total, req.Params.Message))
		},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			note(&logs, fmt.Sprintf("%s %v", req.Params.Level, req.Params.Data))
		},
	})
	client.AddRoots(&mcp.Root{URI: "file:///notes"})
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	require.NoError(t, err)
	require.NotNil(t, cs.InitializeResult().Capabilities.Logging, "logging is announced")

	params := &mcp.CallToolParams{Name: "draft", Arguments: map[string]any{"topic": "tea"}}
	params.SetProgressToken("p1")
	res, err := cs.CallTool(ctx, params)
	require.NoError(t, err)
	require.False(t, res.IsError)
	require.Equal(t, "model says: A cheerful note on tea (tone cheerful; roots file:///notes)", res.Content[0].(*mcp.TextContent).Text)
	select {
	case <-gotAll:
	case <-ctx.Done():
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("progress and log messages did not arrive: %q %q", progress, logs)
	}
	mu.Lock()
	require.Equal(t, []string{"1/3 asking for the tone", "2/3 asking the model", "3/3 done"}, progress)
	require.Equal(t, []string{"info drafting a note on tea"}, logs, "a client that set no level gets every message")
	mu.Unlock()

	require.NoError(t, cs.Close())
	require.Contains(t, stderr.String(), `"tool":"draft"`)
}
