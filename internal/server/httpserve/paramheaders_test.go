package httpserve_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/server/httpserve"
	"github.com/toolgate/toolgate/toolcall"
)

// TestParamHeadersChecked checks that a 2026-07-28 tools/call whose
// Mcp-Param header disagrees with the x-mcp-header annotation of the tool
// as its caller sees it listed gets HTTP 400 and a -32020 error, and the
// tool does not run; with the header matching, it runs.
func TestParamHeadersChecked(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var mu sync.Mutex
	var asked []string
	schema := func(_ context.Context, c *toolcall.Caller, name string) (json.RawMessage, bool) {
		mu.Lock()
		defer mu.Unlock()
		if c == nil {
			asked = append(asked, "nobody")
			return nil, false
		}
		asked = append(asked, c.Subject)
		return json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","x-mcp-header":"Text"}}}`), name == "echo"
	}
	ts := startServer(t, httpserve.Options{MCPServer: f.build, Tokens: testTokens(t), ToolSchema: schema})
	call := func(header map[string]string) (int, string) {
		body := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
		h := map[string]string{"Authorization": "Bearer " + aliceToken, "Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo"}
		for k, v := range header {
			h[k] = v
		}
		resp := postBody(t, ts.URL+"/mcp", []byte(body), h)
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	status, body := call(nil)
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Contains(t, body, `"code":-32020`)
	assert.Contains(t, body, `"id":9`)
	status, body = call(map[string]string{"Mcp-Param-Text": "other"})
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Contains(t, body, `"code":-32020`)
	assert.Zero(t, f.afters.Load(), "a rejected call ran")

	status, body = call(map[string]string{"Mcp-Param-Text": "hi"})
	assert.Equal(t, http.StatusOK, status)
	assert.True(t, strings.Contains(body, `"result"`), body)
	assert.EqualValues(t, 1, f.afters.Load())
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"alice", "alice", "alice"}, asked, "looked up as the caller")
}
