package mcpadapter

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRequestCapabilitiesAsTheSDKReadsThem: the capabilities a request
// carries in _meta read as the go-sdk's ServerRequest.ClientCapabilities
// reads them (without a session to fall back to), on the first call and
// on later ones, whatever the value, and a caller changing its copy does
// not change the next caller's.
func TestRequestCapabilitiesAsTheSDKReadsThem(t *testing.T) {
	for _, raw := range []string{
		`{}`,
		`{"sampling":{}}`,
		`{"sampling":{"tools":{},"context":{}},"elicitation":{"form":{},"url":{}},"roots":{"listChanged":true}}`,
		`{"roots":{}}`,
		`{"experimental":{"x":{"a":[1,2]}},"extensions":{"io.example/y":{}}}`,
		`{"Sampling":{}}`,
		`{"sampling":5}`,
		`{"roots":{"listChanged":"yes"}}`,
		`[]`,
		`"text"`,
		`7`,
	} {
		var v any
		require.NoError(t, json.Unmarshal([]byte(raw), &v))
		req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "t", Meta: mcp.Meta{mcp.MetaKeyClientCapabilities: v}}}
		want := (&mcp.CallToolRequest{Params: req.Params}).ClientCapabilities()
		for range 2 {
			got := requestCapabilities(req)
			assert.Equal(t, want, got, raw)
			if got != nil {
				//lint:ignore SA1019 sampling is a capability clients of earlier revisions declare
				got.Sampling = &mcp.SamplingCapabilities{}
				got.Experimental = nil
			}
		}
	}
	assert.Nil(t, requestCapabilities(&mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "t"}}))
	assert.Nil(t, requestCapabilities(&mcp.CallToolRequest{}))
}

// TestRequestCapabilitiesDecodedOnce: the same capabilities in a later
// call are not decoded again (the SDK's decode allocates a 32 KiB buffer).
func TestRequestCapabilitiesDecodedOnce(t *testing.T) {
	var v any
	require.NoError(t, json.Unmarshal([]byte(`{"sampling":{},"elicitation":{"form":{}},"roots":{"listChanged":true},"x-once":{}}`), &v))
	req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "t", Meta: mcp.Meta{mcp.MetaKeyClientCapabilities: v}}}
	require.NotNil(t, requestCapabilities(req))
	res := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			requestCapabilities(req)
		}
	})
	assert.Less(t, res.AllocedBytesPerOp(), int64(4<<10), "a kept decode allocated %d B", res.AllocedBytesPerOp())
}

// TestAppendKeyTellsValuesApart: values that differ (in a member's case,
// a number, a string's quoting, nesting) have different keys; equal values
// (whatever their maps' order) the same.
func TestAppendKeyTellsValuesApart(t *testing.T) {
	seen := map[string]string{}
	for _, raw := range []string{
		`{}`, `[]`, `null`, `true`, `false`, `0`, `1`, `1.5`, `-1e-7`, `""`, `"a"`, `"a,b"`, `"\"n"`, `"n"`,
		`{"a":1}`, `{"A":1}`, `{"a":"1"}`, `{"a":[1]}`, `{"a":{"b":1}}`, `{"a,":1}`, `{"a":1,"b":2}`, `[1,2]`, `[[1],2]`, `[1,[2]]`, `["1,2"]`, `[null]`, `{"a":null}`,
	} {
		var v any
		require.NoError(t, json.Unmarshal([]byte(raw), &v))
		k, ok := appendKey(nil, v)
		require.True(t, ok, raw)
		if other, dup := seen[string(k)]; dup {
			t.Errorf("%s and %s have the same key %q", raw, other, k)
		}
		seen[string(k)] = raw
	}
	var a, b any
	require.NoError(t, json.Unmarshal([]byte(`{"x":1,"y":{"p":[true],"q":null}}`), &a))
	require.NoError(t, json.Unmarshal([]byte(`{"y":{"q":null,"p":[true]},"x":1.0}`), &b))
	ka, _ := appendKey(nil, a)
	kb, _ := appendKey(nil, b)
	assert.Equal(t, string(ka), string(kb))
	_, ok := appendKey(nil, map[string]any{"t": struct{}{}})
	assert.False(t, ok)
}
