package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/server/gateway"
	"github.com/toolgate/toolgate/toolcall"
	"github.com/toolgate/toolgate/upstream"
)

// TestImportedToolParamHeaders checks that through the gateway's HTTP
// front a 2026-07-28 tools/call of an imported tool whose inputSchema
// carries an x-mcp-header annotation gets the answers the go-sdk server
// behind gives directly: a missing, mismatched or badly Base64-encoded
// Mcp-Param header is HTTP 400 with a HeaderMismatch (-32020) error and
// the tool does not run; a matching one runs it.
func TestImportedToolParamHeaders(t *testing.T) {
	t.Parallel()
	var runs atomic.Int32
	srv := mcp.NewServer(&mcp.Implementation{Name: "hdr", Version: "v0"}, nil)
	srv.AddTool(&mcp.Tool{Name: "geo", InputSchema: json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			runs.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ran"}}}, nil
		})
	upSrv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(upSrv.Close)

	admin := &toolcall.Caller{Subject: "ann", Roles: []string{"admin"}}
	dir := t.TempDir()
	reg, pol := bundledCopy(t, dir, "")
	watch := false
	g := startGateway(t, gateway.Config{
		Serve: config.Serve{Registry: reg, Policy: pol, Tokens: writeTokens(t, dir, admin),
			Upstreams: []upstream.Settings{{Name: "up", URL: upSrv.URL, Import: true, Section: "reports"}},
			Ledger:    "memory", Audit: filepath.Join(dir, "audit.jsonl"), Watch: &watch},
		Stderr: io.Discard,
	})
	const tool = "up.geo"
	call := func(t *testing.T, url string, token string, header map[string]string) (int, string) {
		t.Helper()
		body := `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"` + tool + `","arguments":{"region":"Hello"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewReader([]byte(body)))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", tool)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	for _, c := range []struct {
		name   string
		header map[string]string
	}{
		{"missing", nil},
		{"mismatch", map[string]string{"Mcp-Param-Region": "World"}},
		{"base64 padding", map[string]string{"Mcp-Param-Region": "=?base64?SGVsbG8?="}},
		{"base64 characters", map[string]string{"Mcp-Param-Region": "=?base64?SGVs!!!bG8=?="}},
	} {
		status, body := call(t, g.url, tokenFor(admin), c.header)
		assert.Equal(t, http.StatusBadRequest, status, c.name)
		assert.Contains(t, body, `"code":-32020`, c.name)
		assert.Contains(t, body, `"id":5`, c.name)
	}
	require.Zero(t, runs.Load(), "a rejected call reached the upstream")

	// A matching header, plain or Base64-wrapped, runs the tool: the relay
	// sends the upstream the headers it requires too.
	for _, h := range []string{"Hello", "=?base64?SGVsbG8=?="} {
		status, body := call(t, g.url, tokenFor(admin), map[string]string{"Mcp-Param-Region": h})
		assert.Equal(t, http.StatusOK, status, body)
		assert.Contains(t, body, `"ran"`)
	}
	assert.EqualValues(t, 2, runs.Load())

}
