package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/schema"
	"github.com/toolgate/toolgate/toolcall"
)

// TestInputDocumentMatchesSchema validates documents the engine builds
// against schema/input.schema.json, so the two cannot drift.
func TestInputDocumentMatchesSchema(t *testing.T) {
	t.Parallel()
	validate := inputSchema(t)
	rev := newEngine(t, nil).Current()
	meta := engine.BoundMeta(json.RawMessage(`{"festi/runId":"r-1","n":12345678901234567890.5,"deep":{"a":[1,{"b":null}]}}`))
	cases := []struct {
		name     string
		caller   *toolcall.Caller
		req      engine.Request
		withTool bool
	}{
		{"list, signed in", alice, engine.Request{Method: engine.MethodList, Meta: meta}, false},
		{"list, nobody", nil, engine.Request{Method: engine.MethodList}, false},
		{"call", carol, engine.Request{Method: engine.MethodCall, Tool: "getReward", Arguments: json.RawMessage(`{"idReward":7}`), Meta: meta}, false},
		{"call rules", carol, engine.Request{Method: engine.MethodCall, Tool: "getReward", Arguments: json.RawMessage(`{"idReward":7}`)}, true},
		{"call with non-object arguments", bob, engine.Request{Method: engine.MethodCall, Tool: "nothing", Arguments: json.RawMessage(`[1,2]`)}, false},
		{"claims", &toolcall.Caller{Subject: "x", Roles: []string{}, Claims: map[string]any{"team": "a", "n": 1}}, engine.Request{Method: engine.MethodList}, false},
	}
	imported := newEngine(t, nil, engine.WithRegistryHook(withImportedRows)).Current()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			doc, err := rev.InputDocument(tc.caller, tc.req, tc.withTool)
			require.NoError(t, err)
			validate(t, doc)
		})
	}
	for _, tc := range []engine.Request{
		{Method: engine.MethodList},
		{Method: engine.MethodCall, Tool: "files.wipe", Arguments: json.RawMessage(`{}`)},
		{Method: engine.MethodCall, Tool: "files.read", Arguments: json.RawMessage(`{}`)},
	} {
		t.Run("imported rows "+tc.Method+" "+tc.Tool, func(t *testing.T) {
			t.Parallel()
			doc, err := imported.InputDocument(alice, tc, tc.Tool != "")
			require.NoError(t, err)
			validate(t, doc)
		})
	}
}

// inputSchema compiles schema/input.schema.json and returns a check that
// fails t unless doc, its numbers read exactly, is valid against it.
func inputSchema(t *testing.T) func(t *testing.T, doc []byte) {
	t.Helper()
	s, err := schema.Compile("input.schema.json")
	require.NoError(t, err)
	return func(t *testing.T, doc []byte) {
		t.Helper()
		dec := json.NewDecoder(bytes.NewReader(doc))
		dec.UseNumber()
		var v any
		require.NoError(t, dec.Decode(&v))
		require.NoError(t, s.Validate(v), "%s", doc)
	}
}

func TestInputDocumentShape(t *testing.T) {
	t.Parallel()
	rev := newEngine(t, nil).Current()
	req := engine.Request{
		Method:    engine.MethodCall,
		Tool:      "getReward",
		Arguments: json.RawMessage(`{"idReward": 7}`),
		Meta:      engine.BoundMeta(json.RawMessage(`{"festi/runId": "r-1", "big": 12345678901234567890123}`)),
	}
	doc, err := rev.InputDocument(alice, req, false)
	require.NoError(t, err)
	var got map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(doc, &got))
	require.JSONEq(t, `{"subject":"alice","roles":["manager"],"claims":{}}`, string(got["caller"]))
	require.JSONEq(t, `{"method":"tools/call","tool":"getReward","arguments":{"idReward":7},"meta":{"festi/runId":"r-1","big":12345678901234567890123}}`, string(got["request"]))
	require.Contains(t, string(got["request"]), "12345678901234567890123", "numbers are not rounded")
	var tools []map[string]any
	require.NoError(t, json.Unmarshal(got["tools"], &tools))
	require.Len(t, tools, 5)
	require.Equal(t, map[string]any{
		"name": "getReward", "method": "demo.getReward", "section": "rewards", "driver": nil, "base": true,
		"arguments": []any{
			map[string]any{"name": "idReward", "type": "int", "required": true},
			map[string]any{"name": "note", "type": "string", "required": false, "default": ""},
		},
		"annotations": map[string]any{"readOnlyHint": true},
		"upstream":    nil, "upstream_annotations": nil,
	}, tools[1])
	require.Equal(t, false, tools[2]["base"], "report is admin-only")
	require.Equal(t, "url", tools[4]["driver"])
	_, hasTool := got["tool"]
	require.False(t, hasTool)
}

// withImportedRows adds rows as the binary's upstream import makes them
// (upstream.ImportedRows, docs/contract.md §15): one whose annotations are untrusted,
// one trusted, one routed upstream by a registry row.
func withImportedRows(_ context.Context, reg *registry.Registry) (*registry.Registry, error) {
	declared := map[string]any{"readOnlyHint": true}
	out := &registry.Registry{Sections: reg.Sections, Tools: append(slices.Clone(reg.Tools),
		registry.Tool{Name: "files.wipe", Method: "upstream:files/wipe", Section: "upstream:files",
			Imported: &registry.Imported{Upstream: "files", Annotations: declared}},
		registry.Tool{Name: "files.read", Method: "upstream:files/read", Section: "upstream:files", Annotations: declared,
			Imported: &registry.Imported{Upstream: "files", Annotations: declared}},
		registry.Tool{Name: "files.quiet", Method: "upstream:files/quiet", Section: "upstream:files",
			Imported: &registry.Imported{Upstream: "files"}},
		registry.Tool{Name: "mailer", Method: "upstream:mail/send"},
	)}
	return out, nil
}

// TestInputDocumentUpstreamRows: an imported row says its upstream and
// keeps the upstream's annotations apart (upstream_annotations); annotations
// holds them only when trusted. A registry row routed upstream names its
// upstream and has no upstream_annotations; other rows have neither.
func TestInputDocumentUpstreamRows(t *testing.T) {
	t.Parallel()
	rev := newEngine(t, nil, engine.WithRegistryHook(withImportedRows)).Current()
	doc, err := rev.InputDocument(alice, engine.Request{Method: engine.MethodCall, Tool: "files.wipe", Arguments: json.RawMessage(`{}`)}, true)
	require.NoError(t, err)
	var got struct {
		Tools []map[string]any `json:"tools"`
		Tool  map[string]any   `json:"tool"`
	}
	require.NoError(t, json.Unmarshal(doc, &got))
	rows := map[string]map[string]any{}
	for _, r := range got.Tools {
		rows[r["name"].(string)] = r
	}
	want := map[string][3]any{ // upstream, upstream_annotations, annotations
		"getReward":   {nil, nil, map[string]any{"readOnlyHint": true}},
		"files.wipe":  {"files", map[string]any{"readOnlyHint": true}, map[string]any{}},
		"files.read":  {"files", map[string]any{"readOnlyHint": true}, map[string]any{"readOnlyHint": true}},
		"files.quiet": {"files", map[string]any{}, map[string]any{}},
		"mailer":      {"mail", nil, map[string]any{}},
	}
	for name, w := range want {
		r := rows[name]
		require.NotNil(t, r, name)
		require.Equal(t, w, [3]any{r["upstream"], r["upstream_annotations"], r["annotations"]}, name)
	}
	require.Equal(t, "upstream:files", rows["files.wipe"]["section"])
	require.Equal(t, false, rows["files.wipe"]["base"], "a section no role holds grants nobody")
	require.Equal(t, rows["files.wipe"], got.Tool, "the call rules' tool is the row")
}
