package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/server/gateway"
	"github.com/toolgate/toolgate/toolcall"
	"github.com/toolgate/toolgate/upstream"
)

// pythonSchema is an inputSchema as the Python SDK (FastMCP, pydantic)
// emits it: optional arguments as anyOf with null, a nested model under
// $defs behind $ref, titles and defaults everywhere.
const pythonSchema = `{
  "$defs": {
    "Address": {
      "properties": {
        "street": {"title": "Street", "type": "string"},
        "zip": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": null, "title": "Zip"}
      },
      "required": ["street"],
      "title": "Address",
      "type": "object"
    }
  },
  "properties": {
    "name": {"title": "Name", "type": "string"},
    "address": {"$ref": "#/$defs/Address"},
    "nickname": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": null, "title": "Nickname"},
    "count": {"default": 1, "title": "Count", "type": "integer", "format": "int32"},
    "when": {"type": "string", "format": "date-time"},
    "kind": {"oneOf": [{"const": "a"}, {"const": "b"}]}
  },
  "required": ["name", "address"],
  "title": "greetArguments",
  "type": "object",
  "additionalProperties": false,
  "if": {"properties": {"kind": {"const": "b"}}, "required": ["kind"]},
  "then": {"required": ["when"]}
}`

const pythonOutput = `{"properties": {"result": {"title": "Result", "type": "string"}}, "required": ["result"], "title": "greetOutput", "type": "object"}`

// pythonLikeUpstream serves one tool, greet, with pythonSchema, over
// streamable HTTP on loopback; the tool answers with the arguments it got.
func pythonLikeUpstream(t *testing.T) (url string, listed *mcp.Tool) {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "python-like", Version: "v0"}, nil)
	tool := &mcp.Tool{Name: "greet", Title: "Greet someone", Description: "Greets.",
		InputSchema:  json.RawMessage(pythonSchema),
		OutputSchema: json.RawMessage(pythonOutput),
		Icons:        []mcp.Icon{{Source: "https://example.com/greet.png", MIMEType: "image/png"}},
		Meta:         mcp.Meta{"example.com/owner": "team-a"},
	}
	srv.AddTool(tool, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		got := string(req.Params.Arguments)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: got}},
			StructuredContent: map[string]any{"result": got}}, nil
	})
	// Stateless: what this test checks is the listing and the argument
	// check, not the handshake with a stateful upstream.
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(ts.Close)

	// The tool as a client of the upstream lists it.
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "direct", Version: "1"}, nil).
		Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: ts.URL, DisableStandaloneSSE: true}, nil)
	require.NoError(t, err)
	defer cs.Close()
	list, err := cs.ListTools(t.Context(), nil)
	require.NoError(t, err)
	require.Len(t, list.Tools, 1)
	return ts.URL, list.Tools[0]
}

// showArguments refuses a call sent with _meta test/show, its reason what
// the policy saw of the arguments: the request's and the row's.
const showArguments = `package toolgate.call

deny contains msg if {
	input.request.meta["test/show"] == true
	msg := json.marshal({"sent": input.request.arguments, "declared": input.tool.arguments})
}
`

// TestImportedDefinitionsAsListed (docs/contract.md §19): a tool of a
// Python-style upstream (anyOf-optional arguments, a $defs model behind
// $ref, additionalProperties, if/then) is listed through toolgate with the
// upstream's inputSchema, outputSchema, title, icons and _meta equal as
// JSON values; its calls are checked against that schema, the first
// failing top-level property named; nothing sent is dropped; the policy
// sees the arguments as sent and the schema's top-level properties.
func TestImportedDefinitionsAsListed(t *testing.T) {
	t.Parallel()
	upURL, direct := pythonLikeUpstream(t)
	ann := &toolcall.Caller{Subject: "ann", Roles: []string{"user"}}
	dir := t.TempDir()
	reg, pol := writeSource(t, dir, "sections:\n  \"upstream:py\": { roles: [user] }\ntools: []\n", showArguments)
	watch := false
	g := startGateway(t, gateway.Config{
		Serve: config.Serve{Registry: reg, Policy: pol, Tokens: writeTokens(t, dir, ann),
			Upstreams: []upstream.Settings{{Name: "py", URL: upURL, Import: true}},
			Ledger:    "memory", Audit: filepath.Join(dir, "audit.jsonl"), Watch: &watch},
		Stderr: io.Discard,
	})
	ctx := context.Background()
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			cs := connect(t, ctx, g.url, proto, ann)
			list, err := cs.ListTools(ctx, nil)
			require.NoError(t, err)
			require.Len(t, list.Tools, 1)
			got := *list.Tools[0]
			assert.Equal(t, "py.greet", got.Name)
			got.Name = direct.Name
			asJSON := func(v any) string { b, err := json.Marshal(v); require.NoError(t, err); return string(b) }
			assert.JSONEq(t, pythonSchema, asJSON(got.InputSchema), "inputSchema as listed")
			assert.JSONEq(t, asJSON(direct), asJSON(&got), "the whole definition as listed")

			text := func(args string, meta mcp.Meta) (string, *mcp.CallToolResult) {
				t.Helper()
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "py.greet", Arguments: json.RawMessage(args), Meta: meta})
				require.NoError(t, err)
				require.Len(t, res.Content, 1)
				return res.Content[0].(*mcp.TextContent).Text, res
			}
			ok := `{"name":"ann","address":{"street":"Main St","zip":null},"nickname":null,"count":2,"kind":"b","when":"2026-01-01T00:00:00Z"}`
			answer, res := text(ok, nil)
			assert.False(t, res.IsError, answer)
			assert.JSONEq(t, ok, answer, "every argument reaches the upstream as sent")
			assert.JSONEq(t, `{"result":`+asJSON(answer)+`}`, asJSON(res.StructuredContent))

			for _, c := range []struct{ args, want string }{
				{`{"address":{"street":"x"}}`, "Error: Missing required argument 'name'."},
				{`{"name":"ann"}`, "Error: Missing required argument 'address'."},
				{`{"name":"ann","address":{"zip":"1"}}`, "Error: Invalid value for argument 'address'."},
				{`{"name":"ann","address":{"street":"x"},"nickname":5}`, "Error: Invalid value for argument 'nickname'."},
				{`{"name":"ann","address":{"street":"x"},"count":"two"}`, "Error: Invalid value for argument 'count': expected int."},
				{`{"name":7,"address":{"street":"x"},"count":"two"}`, "Error: Invalid value for argument 'name': expected string."},
				{`{"name":"ann","address":{"street":"x"},"kind":"c"}`, "Error: Invalid value for argument 'kind'."},
				{`{"name":"ann","address":{"street":"x"},"kind":"b"}`, "Error: Missing required argument 'when'."},
				{`{"name":"ann","address":{"street":"x"},"extra":1}`, "Error: Invalid value for argument 'extra'."},
			} {
				answer, res := text(c.args, nil)
				assert.True(t, res.IsError, c.args)
				assert.Equal(t, c.want, answer, c.args)
			}

			// The policy sees the arguments as sent, and the properties.
			sent := `{"name":"ann","address":{"street":"x","zip":"1"},"nickname":null}`
			answer, _ = text(sent, mcp.Meta{"test/show": true})
			var seen struct {
				Sent     json.RawMessage `json:"sent"`
				Declared json.RawMessage `json:"declared"`
			}
			require.NoError(t, json.Unmarshal([]byte(answer), &seen), answer)
			assert.JSONEq(t, sent, string(seen.Sent))
			assert.JSONEq(t, `[
				{"name":"name","type":"string","required":true},
				{"name":"address","required":true},
				{"name":"count","type":"int","required":false},
				{"name":"kind","required":false},
				{"name":"nickname","required":false},
				{"name":"when","type":"string","required":false}]`, string(seen.Declared))
		})
	}
}
