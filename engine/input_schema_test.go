package engine_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/schema"
)

// TestInputDocumentMatchesSchema validates documents the engine builds
// against schema/input.schema.json, so the two cannot drift.
func TestInputDocumentMatchesSchema(t *testing.T) {
	t.Parallel()
	s, err := schema.Compile("input.schema.json")
	require.NoError(t, err)
	rev := newEngine(t, nil).Current()
	meta := engine.BoundMeta(json.RawMessage(`{"festi/runId":"r-1","n":12345678901234567890.5,"deep":{"a":[1,{"b":null}]}}`))
	cases := []struct {
		name     string
		caller   *engine.Caller
		req      engine.Request
		withTool bool
	}{
		{"list, signed in", alice, engine.Request{Method: engine.MethodList, Meta: meta}, false},
		{"list, nobody", nil, engine.Request{Method: engine.MethodList}, false},
		{"call", carol, engine.Request{Method: engine.MethodCall, Tool: "getReward", Arguments: json.RawMessage(`{"idReward":7}`), Meta: meta}, false},
		{"call rules", carol, engine.Request{Method: engine.MethodCall, Tool: "getReward", Arguments: json.RawMessage(`{"idReward":7}`)}, true},
		{"call with non-object arguments", bob, engine.Request{Method: engine.MethodCall, Tool: "nothing", Arguments: json.RawMessage(`[1,2]`)}, false},
		{"claims", &engine.Caller{Subject: "x", Roles: []string{}, Claims: map[string]any{"team": "a", "n": 1}}, engine.Request{Method: engine.MethodList}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			doc, err := rev.InputDocument(tc.caller, tc.req, tc.withTool)
			require.NoError(t, err)
			dec := json.NewDecoder(bytes.NewReader(doc))
			dec.UseNumber()
			var v any
			require.NoError(t, dec.Decode(&v))
			require.NoError(t, s.Validate(v), "%s", doc)
		})
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
	}, tools[1])
	require.Equal(t, false, tools[2]["base"], "report is admin-only")
	require.Equal(t, "url", tools[4]["driver"])
	_, hasTool := got["tool"]
	require.False(t, hasTool)
}
