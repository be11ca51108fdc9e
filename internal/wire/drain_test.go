package wire_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/wire"
)

// drainServer runs a go-sdk server over pipes wrapped in
// wire.AnswerBeforeEOF, its one tool "block" answering only when release
// is closed or its call is cancelled. It returns the client's ends and the result of Run.
func drainServer(t *testing.T, ctx context.Context, release <-chan struct{}) (in io.WriteCloser, out *bufio.Reader, done <-chan error) {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "drain", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "block", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
		})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ch := make(chan error, 1)
	go func() { ch <- srv.Run(ctx, wire.AnswerBeforeEOF(&mcp.IOTransport{Reader: inR, Writer: outW})) }()
	t.Cleanup(func() { _ = outR.Close(); _ = inW.Close() })
	r := bufio.NewReader(outR)
	send(t, inW, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
	_, err := r.ReadBytes('\n')
	require.NoError(t, err)
	send(t, inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return inW, r, ch
}

func send(t *testing.T, w io.Writer, line string) {
	t.Helper()
	_, err := io.WriteString(w, line+"\n")
	require.NoError(t, err)
}

// returns waits for Run's result: the bound is a failure bound, not a
// measure.
func returns(t *testing.T, done <-chan error, why string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal(why)
	}
}

// TestAnswerBeforeEOF: a call read before the input ended is answered,
// and Run returns after it.
func TestAnswerBeforeEOF(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	in, out, done := drainServer(t, context.Background(), release)
	send(t, in, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"block","arguments":{}}}`)
	require.NoError(t, in.Close())
	close(release)
	line, err := out.ReadBytes('\n')
	require.NoError(t, err)
	require.Contains(t, string(line), `"id":2`)
	require.Contains(t, string(line), `done`)
	returns(t, done, "Run did not return after the last call was answered")
}

// TestAnswerBeforeEOFEndsWithTheContext: a call that is never answered
// does not keep Run from returning once its context ends.
func TestAnswerBeforeEOFEndsWithTheContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	release := make(chan struct{})
	defer close(release)
	in, out, done := drainServer(t, ctx, release)
	go func() { _, _ = io.Copy(io.Discard, out) }()
	send(t, in, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"block","arguments":{}}}`)
	require.NoError(t, in.Close())
	cancel()
	returns(t, done, "Run did not return after its context ended")
}

// TestAnswerBeforeEOFDoesNotWaitForAListen: subscriptions/listen is a
// stream, answered only when it ends; an input that ends with one open
// ends the session.
func TestAnswerBeforeEOFDoesNotWaitForAListen(t *testing.T) {
	t.Parallel()
	in, out, done := drainServer(t, context.Background(), nil)
	go func() { _, _ = io.Copy(io.Discard, out) }()
	send(t, in, `{"jsonrpc":"2.0","id":2,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true}}}`)
	require.NoError(t, in.Close())
	returns(t, done, "Run did not return after its input ended with a listen open")
}
