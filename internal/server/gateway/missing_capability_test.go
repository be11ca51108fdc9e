package gateway_test

//lint:file-ignore SA1019 sampling is deprecated from protocol revision 2026-07-28 on; this upstream's tool still requires it

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/toolcall"
	"github.com/toolgate/toolgate/upstream"
)

// needsSamplingUpstream serves one tool, needs_sampling, that runs only
// for a client that declared sampling and otherwise answers
// MissingRequiredClientCapability (-32021), as the go-sdk's conformance
// server's test_missing_capability does.
func needsSamplingUpstream(t *testing.T) string {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "needs-sampling", Version: "v0"}, nil)
	srv.AddTool(&mcp.Tool{Name: "needs_sampling", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if caps := req.ClientCapabilities(); caps != nil && caps.Sampling != nil {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ran"}}}, nil
			}
			data, err := json.Marshal(mcp.MissingRequiredClientCapabilityData{
				RequiredCapabilities: &mcp.ClientCapabilities{Sampling: &mcp.SamplingCapabilities{}}})
			if err != nil {
				return nil, err
			}
			return nil, &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities,
				Message: "sampling capability required but not declared by client", Data: data}
		})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(ts.Close)
	return ts.URL
}

// TestUndeclaredCapabilityRefused (docs/contract.md §19, "2026-07-28"): a
// client that did not declare sampling, calling an upstream tool that
// needs it, gets the upstream's MissingRequiredClientCapability error
// (-32021, its data naming sampling) with HTTP 400, as it does directly;
// a client that declared sampling gets the tool run.
func TestUndeclaredCapabilityRefused(t *testing.T) {
	t.Parallel()
	ann := &toolcall.Caller{Subject: "ann", Roles: []string{"user"}}
	g := importGateway{role: "user", callers: []*toolcall.Caller{ann},
		ups: []upstream.Settings{{Name: "up", URL: needsSamplingUpstream(t), Import: true}}}.start(t)
	call := func(caps string) string {
		return `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"up.needs_sampling","arguments":{},` +
			`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
			`"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},` +
			`"io.modelcontextprotocol/clientCapabilities":` + caps + `}}}`
	}
	body := func(s string) map[string]any {
		t.Helper()
		if i := strings.Index(s, "data: "); i >= 0 { // an event stream: its one message
			s = s[i+len("data: "):]
			s = s[:strings.IndexByte(s, '\n')]
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(s), &m), s)
		return m
	}

	resp, got := post(t, g.url, "Bearer "+tokenFor(ann), call(`{"sampling":{}}`), "Mcp-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "up.needs_sampling")
	require.Equal(t, http.StatusOK, resp.StatusCode, got)
	assert.Contains(t, got, `"ran"`, "a client that declared sampling gets the tool run")

	resp, got = post(t, g.url, "Bearer "+tokenFor(ann), call(`{}`), "Mcp-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "up.needs_sampling")
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, got)
	m := body(got)
	assert.Nil(t, m["result"], "the tool did not run: %s", got)
	e, _ := m["error"].(map[string]any)
	require.NotNil(t, e, "a JSON-RPC error: %s", got)
	assert.EqualValues(t, mcp.CodeMissingRequiredClientCapabilities, e["code"])
	assert.EqualValues(t, 7, m["id"])
	data, _ := e["data"].(map[string]any)
	req, _ := data["requiredCapabilities"].(map[string]any)
	_, sampling := req["sampling"].(map[string]any)
	assert.True(t, sampling, "error.data.requiredCapabilities names sampling: %s", got)
}
