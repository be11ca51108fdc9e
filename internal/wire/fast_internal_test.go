package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/internal/jsonx"
)

// fastSeeds are params of both shapes: the common ones the fast path takes
// and the ones it must leave to the full path.
var fastSeeds = []string{
	`{"name":"echo","arguments":{"text":"hello"},"_meta":{"festi/runId":"r-1"}}`,
	`{"name":"echo","arguments":{"text":"hello"}}`,
	` { "_meta" : { "io.modelcontextprotocol/protocolVersion" : "2026-07-28", "a":[1, 2] } , "name" : "echo" } `,
	`{"name":"echo","_meta":"not an object"}`,
	`{"name":"echo","_meta":null,"arguments":null}`,
	`{"name":"echo","_meta":{"io.modelcontextprotocol/x":1,"io.modelcontextprotocol/x":2}}`,
	`{"name":"e\u0063ho"}`,
	`{"name":42}`,
	`{"name":true}`,
	`{}`,
	`{"Name":"echo"}`,
	`{"name":"echo","name":"other"}`,
	`{"name":"echo","requestState":7}`,
	`{"name":"echo","arguments":{"a":"<&>"}}`,
	`{"name":42,"arguments":{"a&b":"<&>"},"_meta":{"progressToken":"<&>"}}`,
	`{"name":"echo",}`,
	`null`,
	`[]`,
	`{"_meta":{"k":"v"}}`,
	`{"_meta":{"k":"v"},"cursor":"c"}`,
	`{"name":"echo","_meta":{"\u0069o.modelcontextprotocol/x":1}}`,
}

// decoded is params as the SDK's decoding sees them: a value without
// whitespace or key order.
func decoded(t testing.TB, raw json.RawMessage) any {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	require.NoError(t, d.Decode(&v), "%s", raw)
	if m, ok := v.(map[string]any); ok {
		if meta, ok := m["_meta"].(map[string]any); ok {
			if s, ok := meta[Key].(string); ok {
				var info any
				require.NoError(t, json.Unmarshal([]byte(s), &info))
				meta[Key] = info
			}
		}
	}
	return v
}

// checkFastAgrees: where the fast path answers, its params decode to what
// the full path's do.
func checkFastAgrees(t testing.TB, method, params string) bool {
	fast, ok := rewriteParamsFast(method, json.RawMessage(params))
	if !ok {
		return false
	}
	full := rewriteParamsFull(method, json.RawMessage(params))
	assert.Equal(t, decoded(t, full), decoded(t, fast), "%s %s", method, params)
	return true
}

func TestRewriteParamsFastAgreesWithFull(t *testing.T) {
	t.Parallel()
	took := 0
	for _, method := range []string{"tools/call", "tools/list"} {
		for _, p := range fastSeeds {
			if checkFastAgrees(t, method, p) {
				took++
			}
		}
	}
	// The common call shape must take the fast path (else this test
	// checks nothing).
	_, ok := rewriteParamsFast("tools/call", json.RawMessage(fastSeeds[0]))
	assert.True(t, ok)
	assert.Greater(t, took, 5)
	for _, p := range []string{`{"name":42}`, `{"name":"echo","name":"other"}`, `{"Name":"echo"}`, `{"name":"e\u0063ho"}`, `{"name":"echo",}`, `null`} {
		_, ok := rewriteParamsFast("tools/call", json.RawMessage(p))
		assert.False(t, ok, p)
	}
}

func FuzzRewriteParamsFast(f *testing.F) {
	for _, p := range fastSeeds {
		f.Add(p, true)
		f.Add(p, false)
	}
	f.Fuzz(func(t *testing.T, params string, call bool) { checkFastAgrees(t, fuzzMethod(call), params) })
}

// TestRewriteParamsFastAllocations: the common call is rewritten in a
// handful of allocations, not the dozens of a decode and encode. (Not
// parallel: AllocsPerRun.)
func TestRewriteParamsFastAllocations(t *testing.T) {
	params := json.RawMessage(fastSeeds[0])
	fast := testing.AllocsPerRun(20, func() { rewriteParams("tools/call", params) })
	full := testing.AllocsPerRun(20, func() { rewriteParamsFull("tools/call", params) })
	// 4 in a plain build; encoding/json's pools give back less under the
	// race detector, hence the margin.
	assert.LessOrEqual(t, fast, 8.0)
	assert.Less(t, 3*fast, full, "fast %v, full %v", fast, full)
}

var rawSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"},"_meta":{"festi/runId":"r-1"}}}`,
	` { "jsonrpc" : "2.0" , "id" : "a-1" , "method" : "tools/list" , "params" : { } } `,
	`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":42}}`,
	`{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"echo"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`,
	`{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"echo"}}`,
	`{"jsonrpc":"2.0","id":1,"Method":"tools/call","params":{"name":"echo"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","method":"ping","params":{"name":"echo"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/c\u0061ll","params":{"name":"echo"}}`,
	`{"jsonrpc":"2.0","id":[1],"method":"tools/call","params":{"name":"echo"}}`,
}

// checkRawAgrees: where the fast path answers, the SDK decodes its message
// as it does the full path's.
func checkRawAgrees(t testing.TB, raw string) bool {
	fast, ok := rewriteRawFast([]byte(raw))
	if !ok {
		return false
	}
	full := rewriteRawFull([]byte(raw))
	fm, ferr := jsonrpc.DecodeMessage(fast)
	wm, werr := jsonrpc.DecodeMessage(full)
	require.Equal(t, werr == nil, ferr == nil, "%s: %v / %v", raw, werr, ferr)
	if werr != nil {
		return true
	}
	freq, _ := fm.(*jsonrpc.Request)
	wreq, _ := wm.(*jsonrpc.Request)
	require.NotNil(t, freq)
	require.NotNil(t, wreq)
	assert.Equal(t, wreq.Method, freq.Method)
	assert.Equal(t, wreq.ID, freq.ID)
	assert.Equal(t, decoded(t, wreq.Params), decoded(t, freq.Params), raw)
	return true
}

func TestRewriteRawFastAgreesWithFull(t *testing.T) {
	t.Parallel()
	for _, raw := range rawSeeds {
		checkRawAgrees(t, raw)
	}
	for _, raw := range rawSeeds[:4] {
		_, ok := rewriteRawFast([]byte(raw))
		assert.True(t, ok, raw)
	}
	for _, raw := range rawSeeds[4:] {
		_, ok := rewriteRawFast([]byte(raw))
		assert.False(t, ok, raw)
	}
}

func FuzzRewriteRawFast(f *testing.F) {
	for _, raw := range rawSeeds {
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw string) { checkRawAgrees(t, raw) })
}

// TestRewriteLeavesInputAlone: the rewrite reads the body it is given and
// never writes to it, whatever the spacing (a key followed by a space
// before its colon once had that space overwritten), so that a fallback
// to the full path reads what the client sent.
func TestRewriteLeavesInputAlone(t *testing.T) {
	seeds := append(slicesClone(fastSeeds),
		`{"name":"echo","_meta":{"io.modelcontextprotocol/x" :1,"io.modelcontextprotocol/x":2}}`,
		`{"name":"echo","_meta":{"io.modelcontextprotocol/x"`+"\t"+`:1,"io.modelcontextprotocol/y" : 2}}`,
	)
	for _, params := range seeds {
		for _, method := range []string{"tools/call", "tools/list"} {
			in := []byte(params)
			want := rewriteParams(method, []byte(params))
			got := rewriteParams(method, in)
			assert.Equal(t, params, string(in), "the params were written to")
			assert.Equal(t, string(want), string(got))
			body := []byte(`{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":` + params + `}`)
			orig := string(body)
			_, err := RewriteBody(body)
			require.NoError(t, err)
			assert.Equal(t, orig, string(body), "the body was written to")
		}
	}
	// The duplicate falls back to the full path, which must see the name.
	out := rewriteParams("tools/call", []byte(`{"name":"echo","_meta":{"io.modelcontextprotocol/x" :1,"io.modelcontextprotocol/x":2}}`))
	var p struct {
		Name string `json:"name"`
	}
	require.NoError(t, json.Unmarshal(out, &p))
	assert.Equal(t, "echo", p.Name)
}

func slicesClone(s []string) []string { return append([]string(nil), s...) }

// TestAppendInfo: the fast path's wire entry is jsonx.Marshal's, byte for
// byte, for every ASCII byte, invalid UTF-8 and the characters encoding/json
// escapes.
func TestAppendInfo(t *testing.T) {
	var ascii []byte
	for c := range 0x80 {
		ascii = append(ascii, byte(c))
	}
	for _, meta := range []string{"", `{"festi/runId":"r-1"}`, string(ascii), "\xff\xfe a \xc3", "é\u2028\u2029€😀", "<&>", `{"a":"\"\\"}`} {
		want, err := jsonx.Marshal(Info{Meta: meta})
		require.NoError(t, err)
		assert.Equal(t, string(want), string(appendInfo(nil, []byte(meta))), "%q", meta)
	}
}

// sdkMetaSeeds are _meta objects whose protocol entries the bounds keep,
// drop or read at their first occurrence.
var sdkMetaSeeds = []string{
	`{"progressToken":"a","progressToken":"b"}`,
	`{"progressToken":"a","x":1,"progressToken":"b"}`,
	`{"progressToken":"` + strings.Repeat("p", 5000) + `"}`,
	`{"progressToken":"` + strings.Repeat("p", 5000) + `","progressToken":"b"}`,
	`{"io.modelcontextprotocol/x":{"a":{"b":{"c":{"d":1}}}}}`,
	`{"io.modelcontextprotocol/x":{"a":{"b":{"c":1}}}}`,
	`{"progressToken":1e999999}`,
	`{"progressToken":12345678901234567890123}`,
	`{"progress\u0054oken":"escaped","progressToken":"plain"}`,
	`{"progressToken":"a","bad":"` + "\xff" + `"}`,
	`{` + manyEntries(32) + `,"progressToken":"33rd"}`,
	`{` + manyEntries(31) + `,"progressToken":"32nd"}`,
	`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":7}`,
	`{"progressToken":"<&>","io.modelcontextprotocol/x":{"a&b":"<>"}}`,
	`{"\u0078":1,"progressToken":"<&>"}`,
}

func manyEntries(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"k%d":%d`, i, i)
	}
	return b.String()
}

// checkSDKMetaIsTheBounded: the protocol entries the SDK and a method get
// of a rewritten request are exactly those of the bounded _meta the
// policy sees (engine.BoundMeta of what the wire layer carried), and the
// arguments are those sent, each spelled as sent up to whitespace (an
// escape the client did not write is another spelling: docs/contract.md
// §3). false when params do not decode.
func checkSDKMetaIsTheBounded(t testing.TB, method, params string) bool {
	out := rewriteParams(method, json.RawMessage(params))
	var obj struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(out, &obj) != nil {
		return false
	}
	var sent map[string]json.RawMessage
	if json.Unmarshal([]byte(params), &sent) == nil {
		var got map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(out, &got), "%s", out)
		if args, ok := sent["arguments"]; ok {
			assert.Equal(t, compact(t, args), compact(t, got["arguments"]), "arguments of %s %s", method, params)
		}
	}
	var info Info
	require.NoError(t, json.Unmarshal(obj.Meta[Key], &info), "%s", out)
	delete(obj.Meta, Key)
	got := map[string]string{}
	for k, v := range obj.Meta {
		got[k] = compact(t, v)
	}
	want := map[string]string{}
	for _, e := range engine.BoundMeta(json.RawMessage(info.Meta)).Entries() {
		if isProtocolKey(e.Key) || e.Key == progressTokenKey {
			want[e.Key] = compact(t, e.Value)
		}
	}
	assert.Equal(t, want, got, "%s %s", method, params)
	return true
}

func compact(t testing.TB, v json.RawMessage) string {
	var b bytes.Buffer
	require.NoError(t, json.Compact(&b, v))
	return b.String()
}

// TestSDKMetaIsTheBoundedMeta: a progress token or protocol entry sent
// twice, too long, too deep, unrepresentable or past the 32 kept entries
// reaches what runs as the policy saw it: its first occurrence, or not at
// all.
func TestSDKMetaIsTheBoundedMeta(t *testing.T) {
	t.Parallel()
	for _, meta := range sdkMetaSeeds {
		for _, method := range []string{"tools/call", "tools/list"} {
			require.True(t, checkSDKMetaIsTheBounded(t, method, `{"name":"echo","_meta":`+meta+`}`), meta)
		}
	}
	out := rewriteParams("tools/call", json.RawMessage(`{"name":"echo","_meta":{"progressToken":"a","progressToken":"b"}}`))
	assert.Contains(t, string(out), `"progressToken":"a"`)
	assert.NotContains(t, string(out), `"progressToken":"b"`)
	// A case variant of _meta is decoded into the same map by the SDK:
	// its entries would reach what runs unseen.
	for _, p := range []string{`{"name":"echo","_meta":{},"_META":{"progressToken":"x"}}`, `{"name":"echo","_Meta":{"progressToken":"x"}}`} {
		require.True(t, checkSDKMetaIsTheBounded(t, "tools/call", p), p)
		assert.NotContains(t, string(rewriteParams("tools/call", json.RawMessage(p))), `"x"`, p)
	}
}

func FuzzSDKMetaIsTheBoundedMeta(f *testing.F) {
	for _, m := range sdkMetaSeeds {
		f.Add(`{"name":"echo","_meta":`+m+`}`, true)
	}
	for _, p := range fastSeeds {
		f.Add(p, false)
	}
	f.Fuzz(func(t *testing.T, params string, call bool) { checkSDKMetaIsTheBounded(t, fuzzMethod(call), params) })
}

// fuzzMethod is the method a fuzzer's call flag picks.
func fuzzMethod(call bool) string {
	if call {
		return "tools/call"
	}
	return "tools/list"
}
