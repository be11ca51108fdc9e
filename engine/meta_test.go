package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/stretchr/testify/require"
)

// str returns a JSON string whose encoding is exactly n bytes long.
func str(n int) string { return `"` + strings.Repeat("x", n-2) + `"` }

// entries returns an object with keys k0..k(n-1), each valued by val(i).
func entries(n int, val func(i int) string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"k%d":%s`, i, val(i))
	}
	b.WriteByte('}')
	return b.String()
}

func one(i int) string { return "1" }

func TestBoundMeta(t *testing.T) {
	t.Parallel()
	const deep5 = `{"b":{"c":{"d":{"e":1}}}}`
	tests := []struct {
		name string
		in   string
		want string // MarshalJSON of the result
	}{
		// Not an object.
		{"empty input", ``, `{}`},
		{"whitespace only", " \n\t", `{}`},
		{"null", `null`, `{}`},
		{"array", `[]`, `{}`},
		{"array of objects", `[{"a":1}]`, `{}`},
		{"string", `"x"`, `{}`},
		{"number", `1`, `{}`},
		{"true", `true`, `{}`},
		{"unterminated", `{"a":1`, `{}`},
		{"missing value", `{"a":}`, `{}`},
		{"missing colon", `{"a" 1}`, `{}`},
		{"trailing comma", `{"a":1,}`, `{}`},
		{"non-string key", `{1:1}`, `{}`},
		{"trailing garbage", `{"a":1} x`, `{}`},
		{"second object", `{"a":1}{"b":2}`, `{}`},
		{"invalid utf-8", "{\"a\":\"\xff\"}", `{}`},
		{"invalid inside a dropped value", `{"a":{"b":{"c":{"d":{"e":[1,]}}}}}`, `{}`},
		{"invalid after the 32 kept", strings.TrimSuffix(entries(40, one), "}") + `,"z":tru}`, `{}`},
		{"single quotes", `{'a':1}`, `{}`},

		// Objects.
		{"empty object", `{}`, `{}`},
		{"surrounding whitespace", " \n{\"a\":1}\r\n\t ", `{"a":1}`},
		{"wire order kept", `{"z":1,"a":2,"m":3}`, `{"z":1,"a":2,"m":3}`},
		{"null value kept", `{"a":null}`, `{"a":null}`},

		// Depth.
		{"scalar is level 1", `{"a":true}`, `{"a":true}`},
		{"objects 4 levels", `{"a":{"b":{"c":{"d":1}}}}`, `{"a":{"b":{"c":{"d":1}}}}`},
		{"objects 5 levels", `{"a":` + deep5 + `,"x":1}`, `{"x":1}`},
		{"empty object at level 4", `{"a":{"b":{"c":{"d":{}}}}}`, `{"a":{"b":{"c":{"d":{}}}}}`},
		{"arrays 4 levels", `{"a":[[[1]]]}`, `{"a":[[[1]]]}`},
		{"arrays 5 levels", `{"a":[[[[1]]]],"x":1}`, `{"x":1}`},
		{"empty array at level 4", `{"a":[[[[]]]]}`, `{"a":[[[[]]]]}`},
		{"empty array at level 5", `{"a":[[[[[]]]]]}`, `{}`},
		{"mixed 4 levels", `{"a":[{"c":[1]}]}`, `{"a":[{"c":[1]}]}`},
		{"mixed 5 levels", `{"a":[{"c":[{"d":1}]}]}`, `{}`},
		{"mixed empty at level 4", `{"a":{"b":[{}]}}`, `{"a":{"b":[{}]}}`},
		{"string at level 5", `{"a":[[[["s"]]]]}`, `{}`},
		{"deep in a later element", `{"a":[1,[2],[[3]],[[[4]]]]}`, `{}`},
		{"deep then shallow element", `{"a":[[[[]]],1]}`, `{"a":[[[[]]],1]}`},
		{"brackets in strings do not nest", `{"a":"[[[[[{{{{{"}`, `{"a":"[[[[[{{{{{"}`},
		{"escaped quote in a string", `{"a":["\"[[[[[" ]}`, `{"a":["\"[[[[["]}`},

		// Encoded length.
		{"4096 bytes", `{"a":` + str(4096) + `}`, `{"a":` + str(4096) + `}`},
		{"4097 bytes", `{"a":` + str(4097) + `,"b":1}`, `{"b":1}`},
		{"length is of the compact value",
			`{"a":[ ` + str(4090) + ` , 1 ]}`, `{"a":[` + str(4090) + `,1]}`},
		{"escapes count as sent",
			`{"a":"` + strings.Repeat(`\u00e9`, 682) + `xx"}`, // 2+682*6+2 = 4096
			`{"a":"` + strings.Repeat(`\u00e9`, 682) + `xx"}`},
		{"escapes count as sent, one over",
			`{"a":"` + strings.Repeat(`\u00e9`, 682) + `xxx"}`, `{}`},
		{"utf-8 counts bytes",
			`{"a":"` + strings.Repeat("é", 2047) + `"}`, // 2+2047*2 = 4096
			`{"a":"` + strings.Repeat("é", 2047) + `"}`},
		{"utf-8 counts bytes, one over",
			`{"a":"` + strings.Repeat("é", 2047) + `x"}`, `{}`},

		// Count.
		{"32 entries", entries(32, one), entries(32, one)},
		{"33 entries", entries(33, one), entries(32, one)},
		{"33rd kept when one is dropped",
			entries(33, func(i int) string {
				if i == 5 {
					return deep5
				}
				return "1"
			}),
			strings.Replace(entries(33, one), `"k5":1,`, ``, 1)},
		{"many dropped before the kept",
			entries(200, func(i int) string {
				if i < 150 {
					return str(5000)
				}
				return "1"
			}),
			"{" + strings.Join(func() []string {
				var s []string
				for i := 150; i < 182; i++ {
					s = append(s, fmt.Sprintf(`"k%d":1`, i))
				}
				return s
			}(), ",") + "}"},

		// Values kept exactly.
		{"big numbers exact",
			`{"a":12345678901234567890.123456789,"b":-0.0,"c":1E400,"d":1.50,"e":[1e-7]}`,
			`{"a":12345678901234567890.123456789,"b":-0.0,"c":1E400,"d":1.50,"e":[1e-7]}`},
		{"number OPA cannot hold is dropped", `{"a":1e40000,"b":[1E-99999],"c":1e30000}`, `{"c":1e30000}`},
		{"whitespace compacted",
			"{ \"a\" : { \"b\" : [ 1 ,\n 2 ] ,\t\"c\" : \" x  y \" } }",
			`{"a":{"b":[1,2],"c":" x  y "}}`},
		{"escapes kept in values",
			`{"a":"\u00e9\n\"\/\u2028\ud83d\ude00","b":"<&>"}`,
			`{"a":"\u00e9\n\"\/\u2028\ud83d\ude00","b":"<&>"}`},
		{"keys re-encoded", `{"\u00e9\t\"\\\u0001":1,"\/":2}`, "{\"é\\t\\\"\\\\\\u0001\":1,\"/\":2}"},
		{"reserved key kept",
			`{"io.modelcontextprotocol/related-task":{"taskId":"t1"},"progressToken":7}`,
			`{"io.modelcontextprotocol/related-task":{"taskId":"t1"},"progressToken":7}`},
		{"duplicates inside a value kept as sent", `{"a":{"x":1,"x":2}}`, `{"a":{"x":1,"x":2}}`},

		// Duplicate keys: the first occurrence decides.
		{"duplicate key: first wins", `{"a":1,"b":2,"a":3}`, `{"a":1,"b":2}`},
		{"duplicate key: first dropped, later ignored", `{"a":` + deep5 + `,"a":1,"b":2}`, `{"b":2}`},
		{"duplicate key by escape", `{"a":1,"\u0061":2}`, `{"a":1}`},
		{"duplicates do not use up the 32",
			strings.TrimSuffix(entries(31, one), "}") + `,"k0":2,"k1":2,"last":3,"over":4}`,
			strings.TrimSuffix(entries(31, one), "}") + `,"last":3}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := BoundMeta(json.RawMessage(tt.in))
			got, err := m.MarshalJSON()
			require.NoError(t, err)
			require.Equal(t, tt.want, string(got))
			checkInvariants(t, m)
		})
	}
}

// checkInvariants asserts what holds for every Meta: the bounds, that bounding
// again changes nothing, and that the OPA value agrees with the JSON.
func checkInvariants(t *testing.T, m Meta) {
	t.Helper()
	require.LessOrEqual(t, m.Len(), refMaxEntries)
	keys := map[string]bool{}
	for _, e := range m.Entries() {
		require.False(t, keys[e.Key], "duplicate key %q", e.Key)
		keys[e.Key] = true
		require.LessOrEqual(t, len(e.Value), refMaxValueLen, "key %q", e.Key)
		require.LessOrEqual(t, depthOf(t, e.Value), refMaxDepth, "key %q", e.Key)
		var c bytes.Buffer
		require.NoError(t, json.Compact(&c, e.Value))
		require.Equal(t, c.String(), string(e.Value), "key %q not compact", e.Key)
	}

	out, err := m.MarshalJSON()
	require.NoError(t, err)
	require.True(t, json.Valid(out), "%s", out)
	require.Equal(t, byte('{'), out[0])
	again := BoundMeta(out)
	require.Equal(t, m.Entries(), again.Entries(), "bounding twice differs from once")

	want, err := ast.ValueFromReader(bytes.NewReader(out))
	require.NoError(t, err)
	got, err := metaAST(m)
	require.NoError(t, err)
	require.Equal(t, 0, want.Compare(got), "ASTValue %v, MarshalJSON %s", got, out)
}

// depthOf is an independent depth count from the decoder's tokens: a
// container opened inside n others is at level n+1, a scalar (or a key, whose
// value sits beside it) inside n containers is at level n+1.
func depthOf(t *testing.T, v []byte) int {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	open, deepest := 0, 0
	for {
		tok, err := dec.Token()
		if err != nil {
			require.ErrorContains(t, err, "EOF")
			return deepest
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			open++
			deepest = max(deepest, open)
		case json.Delim('}'), json.Delim(']'):
			open--
		default:
			deepest = max(deepest, open+1)
		}
	}
}

func TestBoundMetaHugeValue(t *testing.T) {
	t.Parallel()
	// A megabyte value is dropped; its neighbours survive.
	huge := `{"a":1,"big":[` + strings.Repeat(`"xxxxxxxxxx",`, 100_000) + `1],"b":2}`
	m := BoundMeta(json.RawMessage(huge))
	got, _ := m.MarshalJSON()
	require.Equal(t, `{"a":1,"b":2}`, string(got))

	// So is one nested thousands deep.
	deep := `{"a":1,"deep":` + strings.Repeat("[", 9_000) + strings.Repeat("]", 9_000) + `}`
	got, _ = BoundMeta(json.RawMessage(deep)).MarshalJSON()
	require.Equal(t, `{"a":1}`, string(got))

	// Beyond encoding/json's nesting limit (10000) the input is not JSON
	// that Go can read: the whole _meta is empty, as for any invalid JSON.
	deep = `{"a":1,"deep":` + strings.Repeat("[", 1_000_000) + strings.Repeat("]", 1_000_000) + `}`
	got, _ = BoundMeta(json.RawMessage(deep)).MarshalJSON()
	require.Equal(t, `{}`, string(got))
}

func TestMetaAccessors(t *testing.T) {
	t.Parallel()
	m := BoundMeta(json.RawMessage(`{"festi/runId":"r-\u00e91","n":12345678901234567890.123456789,"o":{"x":[1,"y"]},"nil":null}`))
	require.Equal(t, 4, m.Len())

	s, ok := m.String("festi/runId")
	require.True(t, ok)
	require.Equal(t, "r-é1", s)
	_, ok = m.String("n")
	require.False(t, ok, "a number is not a string")
	_, ok = m.String("nil")
	require.False(t, ok, "null is not a string")
	_, ok = m.String("missing")
	require.False(t, ok)

	v, ok := m.Get("n")
	require.True(t, ok)
	require.Equal(t, "12345678901234567890.123456789", string(v))
	_, ok = m.Get("missing")
	require.False(t, ok)

	require.Equal(t, map[string]any{
		"festi/runId": "r-é1",
		"n":           json.Number("12345678901234567890.123456789"),
		"o":           map[string]any{"x": []any{json.Number("1"), "y"}},
		"nil":         nil,
	}, m.Map())

	av, err := metaAST(m)
	require.NoError(t, err)
	obj, ok := av.(ast.Object)
	require.True(t, ok)
	require.Equal(t, ast.Number("12345678901234567890.123456789"), obj.Get(ast.StringTerm("n")).Value)
	require.Equal(t, ast.String("r-é1"), obj.Get(ast.StringTerm("festi/runId")).Value)
	require.Equal(t, ast.NullValue, obj.Get(ast.StringTerm("nil")).Value)

	// Values share one array but are clipped: appending to one leaves its
	// neighbours alone.
	es := m.Entries()
	_ = append(es[0].Value, "xxxxxxxx"...)
	require.Equal(t, "12345678901234567890.123456789", string(es[1].Value))

	// The zero Meta is empty.
	var zero Meta
	require.Equal(t, 0, zero.Len())
	b, err := zero.MarshalJSON()
	require.NoError(t, err)
	require.Equal(t, `{}`, string(b))
	zv, err := metaAST(zero)
	require.NoError(t, err)
	require.Equal(t, 0, ast.NewObject().Compare(zv))
	require.Empty(t, zero.Map())

	// Meta marshals as a field of a larger document.
	doc, err := json.Marshal(map[string]any{"meta": m})
	require.NoError(t, err)
	require.JSONEq(t, `{"meta":{"festi/runId":"r-é1","n":12345678901234567890.123456789,"o":{"x":[1,"y"]},"nil":null}}`, string(doc))
}

func ExampleBoundMeta() {
	m := BoundMeta(json.RawMessage(`{
		"festi/runId": "r-1",
		"amount": 12345678901234567890.123456789,
		"tooDeep": {"b": {"c": {"d": {"e": 1}}}},
		"festi/runId": "ignored: the first occurrence decides"
	}`))
	out, _ := m.MarshalJSON()
	fmt.Println(string(out))
	run, _ := m.String("festi/runId")
	fmt.Println(run)
	// Output:
	// {"festi/runId":"r-1","amount":12345678901234567890.123456789}
	// r-1
}

func BenchmarkBoundMeta(b *testing.B) {
	for _, n := range []int{8, 32} {
		raw := json.RawMessage(entries(n, func(i int) string {
			switch i % 4 {
			case 0:
				return `"r-12345"`
			case 1:
				return `12345678901234567890.5`
			case 2:
				return `{"taskId": "t-1", "tags": ["a", "b"]}`
			default:
				return `true`
			}
		}))
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				if BoundMeta(raw).Len() != n {
					b.Fatal("entries lost")
				}
			}
		})
	}
}
