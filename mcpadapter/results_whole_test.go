package mcpadapter_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/methods"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/toolcall"
)

// marker is what every string of the "every" tool's result carries.
const marker = "SECRET-ABC"

const everyRow = `
  - name: every
    method: test.every
`

// everyResult is a result with every kind of content, a marker in each
// string a client reads of it (text and JSON payloads included).
func everyResult() *mcp.CallToolResult {
	ann := &mcp.Annotations{LastModified: "2025-01-01T00:00:00Z " + marker}
	size := int64(3)
	return &mcp.CallToolResult{
		Meta: mcp.Meta{"note": "a " + marker, marker: "key"},
		Content: []mcp.Content{
			&mcp.TextContent{Text: "text " + marker, Meta: mcp.Meta{"m": marker}, Annotations: ann},
			&mcp.ImageContent{Data: []byte{0x89, 'P', 'N', 'G'}, MIMEType: "image/png"},
			&mcp.AudioContent{Data: []byte("a " + marker), MIMEType: "text/plain; charset=utf-8"},
			&mcp.ResourceLink{URI: "file:///" + marker, Name: "name " + marker, Title: "title " + marker, Description: "description " + marker, MIMEType: "text/plain", Size: &size,
				Icons: []mcp.Icon{{Source: "https://example.com/" + marker + ".png"}}},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///etc/" + marker, MIMEType: "text/plain", Text: "file " + marker, Meta: mcp.Meta{"k": marker}}},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///b.json", MIMEType: "application/vnd.x+json", Blob: []byte(`{"k":"` + marker + `"}`)}},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///c.bin", MIMEType: "application/octet-stream", Blob: []byte{0, 1, 2}}},
		},
		StructuredContent: map[string]any{marker: "a key", "v": []any{marker, json.Number("12345678901234567890")}},
	}
}

func everySetup(policies map[string]string) setup {
	m := methods.Map{}
	m.Register("test.every", func(context.Context, struct{}) (*mcp.CallToolResult, error) { return everyResult(), nil })
	return setup{caller: maxCaller, registry: string(toolgate.ExampleRegistry()) + everyRow, methods: m, policies: policies}
}

// TestResultRedactedWhole (docs/limits.md "Result rules"): redact rewrites
// every string a client reads of a result — text, embedded resource text
// and URI, resource link URI, name, title, description and icons, the
// result's and items' _meta (keys too), annotations, keys and values of
// structuredContent, and binary payloads of text and JSON MIME types —
// and leaves other binary payloads, numbers and the protocol's names.
func TestResultRedactedWhole(t *testing.T) {
	t.Parallel()
	g := newGoverned(t, everySetup(map[string]string{"redact.rego": "package toolgate.result\n\nredact contains `SECRET-[A-Z]+`\n"}))
	c := g.connectRaw(t, proto20250618)
	got := string(c.call(`{"name":"every","arguments":{}}`))
	assert.NotContains(t, got, marker)
	assert.NotContains(t, got, "U0VDUkVULUFCQ", "no base64 of the marker either")
	res := toolResult(t, []byte(got))
	require.Len(t, res.Content, 7)
	assert.Equal(t, "text [redacted]", res.Content[0].(*mcp.TextContent).Text)
	assert.Equal(t, []byte{0x89, 'P', 'N', 'G'}, res.Content[1].(*mcp.ImageContent).Data, "a binary image passes")
	assert.Equal(t, "a [redacted]", string(res.Content[2].(*mcp.AudioContent).Data), "a text payload is redacted and encoded again")
	link := res.Content[3].(*mcp.ResourceLink)
	assert.Equal(t, []string{"file:///[redacted]", "name [redacted]", "title [redacted]", "description [redacted]"}, []string{link.URI, link.Name, link.Title, link.Description})
	emb := res.Content[4].(*mcp.EmbeddedResource).Resource
	assert.Equal(t, []string{"file:///etc/[redacted]", "file [redacted]"}, []string{emb.URI, emb.Text})
	assert.JSONEq(t, `{"k":"[redacted]"}`, string(res.Content[5].(*mcp.EmbeddedResource).Resource.Blob))
	assert.Equal(t, []byte{0, 1, 2}, res.Content[6].(*mcp.EmbeddedResource).Resource.Blob)
	assert.Contains(t, got, `"structuredContent":{"[redacted]":"a key","v":["[redacted]",12345678901234567890]}`)
	assert.True(t, g.after.lastEnd(t).Redacted)
}

// TestResultRulesSeeWhole: deny reads every string of the result in
// input.result (text payloads decoded), and the type, MIME type and size
// of other binary payloads, so a policy can withhold those.
func TestResultRulesSeeWhole(t *testing.T) {
	t.Parallel()
	policy := `package toolgate.result

deny contains sprintf("saw %s", [concat(",", sort(seen))]) if {
	seen := [sprintf("%v", [path[count(path) - 1]]) |
		walk(input.result, [path, value])
		is_string(value)
		contains(value, "SECRET-ABC")
	]
	count(seen) > 0
}

deny contains sprintf("binary %s of %d bytes", [item.resource.mimeType, item.resource.size]) if {
	some item in input.result.content
	item.type == "resource"
	not item.resource.blob
	item.resource.size
}

deny contains sprintf("image %s of %d bytes", [item.mimeType, item.size]) if {
	some item in input.result.content
	item.type == "image"
	not item.data
}

deny contains "keys seen" if {
	input.result.structuredContent["SECRET-ABC"] == "a key"
	input.result._meta["SECRET-ABC"] == "key"
}

deny contains "compatible" if {
	input.result.content[4].mimeType == "text/plain"
	input.result.isError == false
}
`
	g := newGoverned(t, everySetup(map[string]string{"deny.rego": policy}))
	c := g.connectRaw(t, proto20250618)
	c.call(`{"name":"every","arguments":{}}`)
	end := g.after.lastEnd(t)
	require.Equal(t, toolcall.OutcomeWithheld, end.Outcome, "%v", end.Err)
	assert.Equal(t, []string{
		"binary application/octet-stream of 3 bytes",
		"compatible",
		"image image/png of 4 bytes",
		"keys seen",
		"saw 0,blob,data,description,k,lastModified,m,name,note,src,text,text,title,uri,uri",
	}, end.Reasons())
}

// markerCatalog is testCatalog whose prompts, resources and completions
// carry the marker in every string.
type markerCatalog struct{ testCatalog }

func (markerCatalog) GetPrompt(context.Context, *registry.Prompt, *mcp.GetPromptParams) (*mcp.GetPromptResult, error) {
	return &mcp.GetPromptResult{Description: "d " + marker, Messages: []*mcp.PromptMessage{
		{Role: "user", Content: &mcp.TextContent{Text: "prompt " + marker}},
		{Role: "user", Content: &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///" + marker, MIMEType: "text/plain", Blob: []byte("blob " + marker)}}},
	}}, nil
}

func (markerCatalog) ReadResource(_ context.Context, _ string, p *mcp.ReadResourceParams) (*mcp.ReadResourceResult, error) {
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{
		{URI: p.URI, MIMEType: "text/plain", Text: "content " + marker},
		{URI: p.URI + "#2", MIMEType: "application/json", Blob: []byte(`{"k":"` + marker + `"}`)},
	}}, nil
}

func (markerCatalog) Complete(context.Context, string, *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{"v " + marker}}}, nil
}

func newMarkerCatalogGoverned(t testing.TB, policy string) *governed {
	hook := engine.WithRegistryHook(func(_ context.Context, reg *registry.Registry) (*registry.Registry, error) {
		out := *reg
		out.Prompts = testPrompts
		return &out, nil
	})
	return newGoverned(t, setup{caller: maxCaller, catalog: markerCatalog{}, policies: map[string]string{"catalog.rego": catalogGrant, "rules.rego": policy},
		opts: []engine.Option{hook}})
}

// TestCatalogResultsRedacted (docs/limits.md "Result rules"): the results
// of prompts/get, resources/read and completion/complete pass the result
// rules: redact rewrites every string of them, text payloads included.
func TestCatalogResultsRedacted(t *testing.T) {
	t.Parallel()
	g := newMarkerCatalogGoverned(t, "package toolgate.result\n\nredact contains `SECRET-[A-Z]+`\n")
	c := g.connectRaw(t, proto20250618)
	for _, tc := range []struct{ method, params string }{
		{"prompts/get", `{"name":"up.public"}`},
		{"resources/read", `{"uri":"file:///public/a.txt"}`},
		{"completion/complete", `{"ref":{"type":"ref/prompt","name":"up.secret"},"argument":{"name":"topic","value":"x"}}`},
	} {
		got := string(c.request(tc.method, tc.params))
		assert.Contains(t, got, `"result"`, tc.method)
		assert.Contains(t, got, mcpadapter.Redacted, tc.method)
		assert.NotContains(t, got, marker, tc.method)
		assert.NotContains(t, got, "U0VDUkVULUFCQ", tc.method)
	}
}

// TestCatalogResultsWithheld: deny withholds a prompts/get, resources/read
// or completion/complete result (input.request.method tells them apart):
// a JSON-RPC error saying so, with the reasons.
func TestCatalogResultsWithheld(t *testing.T) {
	t.Parallel()
	g := newMarkerCatalogGoverned(t, `package toolgate.result

deny contains sprintf("%s holds the marker", [input.request.method]) if {
	walk(input.result, [_, value])
	is_string(value)
	contains(value, "SECRET-ABC")
}
`)
	c := g.connectRaw(t, proto20250618)
	for _, tc := range []struct{ method, params string }{
		{"prompts/get", `{"name":"up.public"}`},
		{"resources/read", `{"uri":"file:///public/a.txt"}`},
		{"completion/complete", `{"ref":{"type":"ref/prompt","name":"up.secret"},"argument":{"name":"topic","value":"x"}}`},
	} {
		got := string(c.request(tc.method, tc.params))
		assert.Contains(t, got, `"error":{"code":-32603,"message":"The result was withheld: `+tc.method+` holds the marker."}`, tc.method)
		assert.NotContains(t, got, marker, tc.method)
	}
}
