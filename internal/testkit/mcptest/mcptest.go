// Package mcptest is what the tests' MCP clients share: a bearer token on
// every request, the tokens file that signs them in, a tools/call reduced
// to its one text, and a GET of one of the server's other pages as a
// caller. Tests only.
package mcptest

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/identity"
)

// Bearer adds "Authorization: Bearer Token" to every request it sends
// through Next (nil: http.DefaultTransport).
type Bearer struct {
	Token string
	Next  http.RoundTripper
}

// RoundTrip sends a copy of r with the header set.
func (b Bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.Token)
	next := b.Next
	if next == nil {
		next = http.DefaultTransport
	}
	return next.RoundTrip(r)
}

// WriteTokens writes dir/tokens.json, a tokens file (docs/contract.md §8)
// that signs in each bearer token of entries as its caller, and returns
// its path. A file that cannot be written fails the test.
func WriteTokens(t testing.TB, dir string, entries map[string]identity.TokenEntry) string {
	t.Helper()
	hashed := make(map[string]identity.TokenEntry, len(entries))
	for token, e := range entries {
		hashed[identity.HashToken(token)] = e
	}
	b, err := json.Marshal(hashed)
	if err != nil {
		t.Fatalf("tokens file: %v", err)
	}
	p := filepath.Join(dir, "tokens.json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatalf("tokens file: %v", err)
	}
	return p
}

// Answer is what a tools/call answered: its one text and whether isError.
type Answer struct {
	Text    string
	IsError bool
}

// Call makes one tools/call (nil args: none), bounded by bound (a failure
// bound only), and returns its answer. A JSON-RPC error, or a result that
// is not one text, fails the test: every answer is a CallToolResult
// (docs/contract.md §5).
func Call(t testing.TB, bound time.Duration, cs *mcp.ClientSession, name string, args map[string]any, meta mcp.Meta) Answer {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), bound)
	defer cancel()
	if args == nil {
		args = map[string]any{}
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args, Meta: meta})
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("tools/call %s: %d contents, want 1: %+v", name, len(res.Content), res)
	}
	text, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("tools/call %s: content %T", name, res.Content[0])
	}
	return Answer{Text: text.Text, IsError: res.IsError}
}

// ToolNames are the names of the tools cs lists (one tools/list request,
// bounded by ctx), in the listing's order; empty, not nil, when it lists
// none. A failed listing fails the test.
func ToolNames(t testing.TB, ctx context.Context, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	names := []string{}
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names
}

// Get is a GET of url with "Authorization: Bearer token" ("": none),
// bounded by ctx; it returns the answer's status and body. A request that
// cannot be sent or an answer that cannot be read fails the test.
func Get(t testing.TB, ctx context.Context, url, token string) (int, []byte) {
	t.Helper()
	return Do(t, ctx, http.MethodGet, url, token, "")
}

// Do is Get with another method, a body ("": none) and further headers
// (name, value pairs).
func Do(t testing.TB, ctx context.Context, method, url, token, body string, header ...string) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, url, err)
	}
	return resp.StatusCode, b
}
