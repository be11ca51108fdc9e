package upstream

//lint:file-ignore SA1019 logging, sampling and roots are deprecated from protocol revision 2026-07-28 on; earlier revisions have them, and toolgate keeps what the server behind it does

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/hooks/ledger"
	"github.com/toolgate/toolgate/internal/testkit/testserver"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/store"
	"github.com/toolgate/toolgate/toolcall"
)

// TestRelayMultiRoundTripWithIdempotencyKey: on the 2026-07-28 revision a
// client retries a call after an input-required result with the same
// params, its idempotency key included. The input-required result is not
// the call's outcome: the ledger must not store it and answer it to the
// retry (which would ask again forever), but let the retry reach the
// upstream with its answers; the completed result is what a later call
// with that key replays.
func TestRelayMultiRoundTripWithIdempotencyKey(t *testing.T) {
	t.Parallel()
	srv := testserver.New(testserver.Options{})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(ts.Close)
	p := newPool(t, Config{Name: "up", URL: ts.URL, Timeout: 5 * time.Second})
	eng, err := engine.New(t.Context(), relayRegistry, engine.WithTimeout(10*time.Second))
	require.NoError(t, err)
	a := mcpadapter.New(mcpadapter.Options{Revisions: eng, Methods: p, Logging: true,
		Caller: mcpadapter.StaticCaller(&toolcall.Caller{Subject: "alice"})})
	a.AddHook(ledger.New(store.NewMemoryStore(), ledger.Options{}).Hook())
	server := a.NewServer(&mcp.Implementation{Name: "front"}, nil)
	ct, st := mcp.NewInMemoryTransports()
	_, err = server.Connect(t.Context(), st, nil)
	require.NoError(t, err)
	client := mcp.NewClient(&mcp.Implementation{Name: "alice"}, &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "alice:" + req.Params.Messages[0].Content.(*mcp.TextContent).Text}}, nil
		},
	})
	cs, err := client.Connect(t.Context(), ct, &mcp.ClientSessionOptions{ProtocolVersion: testserver.MultiRoundTripRevision})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), failureBound)
	defer cancel()
	call := func() (*mcp.CallToolResult, error) {
		return cs.CallTool(ctx, &mcp.CallToolParams{Name: "interact", Arguments: map[string]any{"label": "L"},
			Meta: mcp.Meta{ledger.DefaultMetaKey: "k-1"}})
	}
	res, err := call()
	require.NoError(t, err, "the retry with the answers reached the upstream")
	require.Equal(t, "L sampled=alice:L elicited=none roots= state=ok", res.Content[0].(*mcp.TextContent).Text)
	res, err = call()
	require.NoError(t, err)
	require.Equal(t, "L sampled=alice:L elicited=none roots= state=ok", res.Content[0].(*mcp.TextContent).Text, "the completed result is replayed")
}
