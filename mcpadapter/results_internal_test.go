package mcpadapter

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/internal/exactjson"
	"github.com/toolgate/toolgate/schema"
	"github.com/toolgate/toolgate/toolcall"
)

// TestResultDocumentMatchesSchema: input.result as the adapter builds it,
// beside the call rules' input, is what schema/input.schema.json says.
func TestResultDocumentMatchesSchema(t *testing.T) {
	t.Parallel()
	s, err := schema.Compile("input.schema.json")
	require.NoError(t, err)
	fsys := fstest.MapFS{
		"registry.yaml":   {Data: []byte("tools:\n  - name: echo\n    method: demo.echo\n")},
		"policies/r.rego": {Data: []byte("package toolgate.result\n\ndeny contains \"x\" if false\n")},
	}
	eng, err := engine.New(context.Background(), engine.Source{FS: fsys, Registry: "registry.yaml", Policies: "policies"}, engine.WithTimeout(time.Minute))
	require.NoError(t, err)
	caller := &toolcall.Caller{Subject: "max", Roles: []string{}, Claims: map[string]any{}}
	base, err := eng.Current().InputDocument(caller, engine.Request{Method: engine.MethodCall, Tool: "echo", Arguments: json.RawMessage(`{}`)}, true)
	require.NoError(t, err)
	for name, res := range map[string]*mcp.CallToolResult{
		"text":  TextResult("hi", false),
		"empty": {Content: []mcp.Content{}, IsError: true},
		"every kind": {Content: []mcp.Content{
			&mcp.TextContent{Text: "a"},
			&mcp.ImageContent{Data: []byte{1}, MIMEType: "image/png"},
			&mcp.AudioContent{Data: []byte{1}, MIMEType: "audio/wav"},
			&mcp.ResourceLink{URI: "file:///x", Name: "x", MIMEType: "text/plain"},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///y", MIMEType: "application/json", Text: "{}"}},
			&mcp.ResourceLink{URI: "file:///z", Name: "z"},
		}, StructuredContent: map[string]any{"n": json.Number("12345678901234567890.5"), "s": []any{"x"}}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			doc, _, err := resultDocument(res)
			require.NoError(t, err)
			var in map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(base, &in))
			in["result"] = doc
			full, err := json.Marshal(in)
			require.NoError(t, err)
			dec := json.NewDecoder(bytes.NewReader(full))
			dec.UseNumber()
			var v any
			require.NoError(t, dec.Decode(&v))
			require.NoError(t, s.Validate(v), "%s", doc)
			require.NotContains(t, string(doc), `"data"`, "no item's data reaches the policy")
		})
	}
}

var credential = regexp.MustCompile(`AKIA[0-9A-Z]{16}`)

// FuzzResultRedaction: whatever a method or upstream returns (text, and
// structuredContent of any JSON), building input.result and redacting never
// panic, the document is JSON, redaction leaves no match of a pattern that
// its replacement cannot form, and everything else (numbers, keys, other
// text) comes through unchanged (keys of structuredContent are redacted too).
func FuzzResultRedaction(f *testing.F) {
	f.Add("key AKIAIOSFODNN7EXAMPLE", `{"a":"AKIAIOSFODNN7EXAMPLE","n":12345678901234567890.5,"l":[true,null,"AKIAAKIAIOSFODNN7EXAMPLEX"]}`)
	f.Add("", `null`)
	f.Add("AKIAAKIA0123456789ABCDEF", `"AKIA0123456789ABCDEF"`)
	f.Add("\xff", `{"\u0000":"\ud800"}`)
	f.Fuzz(func(t *testing.T, text, structured string) {
		res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
		if json.Valid([]byte(structured)) {
			res.StructuredContent = json.RawMessage(structured)
		}
		doc, tree, err := resultDocument(res)
		if err != nil {
			return
		}
		if !json.Valid(doc) {
			t.Fatalf("not JSON: %s", doc)
		}
		if exactjson.Check(doc) != nil {
			// The result rules refuse such a document (a key twice, a lone
			// surrogate): the result is withheld before any redaction, so
			// redaction never reads it (engine TestResultRuleInput).
			return
		}
		out, changed, err := redactResult(res, tree, []*regexp.Regexp{credential})
		if err != nil {
			return
		}
		got := out.Content[0].(*mcp.TextContent).Text
		if credential.MatchString(got) {
			t.Fatalf("a match is left in %q", got)
		}
		// What a client reads is the text as JSON carries it: invalid
		// UTF-8 arrives as U+FFFD whether or not anything was redacted.
		sent := jsonRoundTrip(t, text)
		if !changed && got != text {
			t.Fatalf("unchanged, yet %q became %q", text, got)
		}
		if !credential.MatchString(text) && got != text && got != sent {
			t.Fatalf("%q changed without a match: %q", text, got)
		}
		if res.Content[0].(*mcp.TextContent).Text != text {
			t.Fatal("the method's result was modified")
		}
		if sc := []byte(structured); res.StructuredContent != nil {
			b, err := json.Marshal(out.StructuredContent)
			if err != nil {
				t.Fatalf("the redacted structuredContent does not encode: %v", err)
			}
			if credential.Match(b) {
				t.Fatalf("a match is left in %s", b)
			}
			if !credential.Match(sc) && changed && !strings.Contains(got, Redacted) {
				t.Fatalf("changed without a match: %s → %s", sc, b)
			}
		}
	})
}

// TestEmptyKeyIsSeenAndRedacted: a member named "" of a free object is a
// member like any other: the rules see it and redaction rewrites it (a
// protocol object without a binary payload once skipped it).
func TestEmptyKeyIsSeenAndRedacted(t *testing.T) {
	t.Parallel()
	res := &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: "t"}},
		StructuredContent: json.RawMessage(`{"":"AKIA0000000000000000"}`),
		Meta:              mcp.Meta{"": "AKIA1111111111111111"},
	}
	doc, tree, err := resultDocument(res)
	require.NoError(t, err)
	var in struct {
		StructuredContent map[string]string `json:"structuredContent"`
		Meta              map[string]string `json:"_meta"`
	}
	require.NoError(t, json.Unmarshal(doc, &in))
	require.Equal(t, map[string]string{"": "AKIA0000000000000000"}, in.StructuredContent)
	require.Equal(t, map[string]string{"": "AKIA1111111111111111"}, in.Meta)
	out, changed, err := redactResult(res, tree, []*regexp.Regexp{credential})
	require.NoError(t, err)
	require.True(t, changed)
	b, err := json.Marshal(out)
	require.NoError(t, err)
	require.NotRegexp(t, credential, string(b))
	require.Contains(t, string(b), `"":"`+Redacted+`"`)
}

// jsonRoundTrip is s as a client decodes it from JSON.
func jsonRoundTrip(t *testing.T, s string) string {
	b, err := json.Marshal(s)
	require.NoError(t, err)
	var out string
	require.NoError(t, json.Unmarshal(b, &out))
	return out
}
