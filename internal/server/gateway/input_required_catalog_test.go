package gateway_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/testkit/mcptest"
	"github.com/toolgate/toolgate/toolcall"
	"github.com/toolgate/toolgate/upstream"
)

// TestInputRequiredPromptThroughGateway (docs/contract.md §19,
// "2026-07-28"): an upstream that answers prompts/get with an
// input-required result has it reach a 2026-07-28 client as it is, and
// the client's retry, with its answers, reach the upstream.
func TestInputRequiredPromptThroughGateway(t *testing.T) {
	t.Parallel()
	srv := mcp.NewServer(&mcp.Implementation{Name: "asks", Version: "v0"}, nil)
	srv.AddPrompt(&mcp.Prompt{Name: "ctx"}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		if r, ok := req.Params.InputResponses["c"].(*mcp.ElicitResult); ok && r != nil && r.Action == "accept" {
			v, _ := r.Content["context"].(string)
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "Context: " + v}}}}, nil
		}
		return &mcp.GetPromptResult{InputRequests: mcp.InputRequestMap{"c": &mcp.ElicitParams{Message: "context?",
			RequestedSchema: &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"context": {Type: "string"}}}}}}, nil
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(ts.Close)

	ann := &toolcall.Caller{Subject: "ann", Roles: []string{"admin"}}
	g := importGateway{callers: []*toolcall.Caller{ann},
		ups: []upstream.Settings{{Name: "up", URL: ts.URL, Import: true}}}.start(t)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	asked := 0
	client := mcp.NewClient(&mcp.Implementation{Name: "mrtr-test", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked++
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"context": "tests"}}, nil
		}})
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: g.url, DisableStandaloneSSE: true,
		HTTPClient: &http.Client{Transport: mcptest.Bearer{Token: tokenFor(ann), Next: tr}}}, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	res, err := cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "up.ctx"})
	require.NoError(t, err)
	require.Equal(t, 1, asked, "the client was asked once")
	require.Len(t, res.Messages, 1)
	require.Equal(t, "Context: tests", res.Messages[0].Content.(*mcp.TextContent).Text)
}
