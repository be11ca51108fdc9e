package canon

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestJSON(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want string }{
		{`{"b":1,"a":{"d":[1,2],"c":"x"}}`, `{"a":{"c":"x","d":[1,2]},"b":1}`},
		{" { \"a\" : 12345678901234567890.5 } ", `{"a":12345678901234567890.5}`},
		{`{"h":"<&>"}`, `{"h":"<&>"}`},
		{`not json`, `not json`},
	}
	for _, c := range cases {
		require.Equal(t, c.want, string(JSON([]byte(c.in))), c.in)
	}
	require.Equal(t, SHA256([]byte(`{"a":1,"b":2}`)), SHA256([]byte(`{"b":2, "a":1}`)))
	require.NotEqual(t, SHA256([]byte(`{"a":1}`)), SHA256([]byte(`{"a":1.0}`)))
}

// TestCanonicalFastPath: values already canonical are returned as they
// are, without allocating; anything the encoder would rewrite (whitespace,
// key order, duplicate keys, escapes, non-ASCII, trailing data, deep
// nesting) takes the long way, and both ways agree.
func TestCanonicalFastPath(t *testing.T) {
	for _, in := range []string{`{}`, `[]`, `{"text":"hello"}`, `{"a":{"c":"x","d":[1,-2.5e+3,0,true,false,null]},"b":"<&>"}`,
		`"s"`, `12`, `-0`, `1E5`, `{"a":[],"b":{}}`} {
		require.True(t, canonical([]byte(in)), in)
		require.Equal(t, string(reencode([]byte(in))), string(JSON([]byte(in))), in)
	}
	deep := strings.Repeat("[", 100) + strings.Repeat("]", 100)
	for _, in := range []string{``, ` {}`, `{} `, `{"b":1,"a":2}`, `{"a":1,"a":2}`, `{"a":"\u0041"}`, `{"a":"\n"}`, "{\"a\":\"é\"}",
		`{"a":1}x`, `{"a":01}`, `{"a":1.}`, `{"a":.5}`, `{"a":1e}`, `{"a":tru}`, `[1,]`, `{"a":1,}`, `{"a"}`, `"\xff"`, `nul`, deep} {
		require.False(t, canonical([]byte(in)), in)
		require.Equal(t, string(reencode([]byte(in))), string(JSON([]byte(in))), in)
	}
	raw := []byte(`{"a":{"c":"x","d":[1,2]},"b":1}`)
	require.Zero(t, testing.AllocsPerRun(10, func() { _ = JSON(raw) }))
}

// FuzzCanonical: a differential test of JSON's fast path against the
// long way (decode, encode) on arbitrary bytes.
//
//	go test -run '^$' -fuzz FuzzCanonical -fuzztime 10s ./internal/canon
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{`{"text":"hello"}`, `{"b":1,"a":{"d":[1,2],"c":"x"}}`, `{"a":1,"a":2}`, `[-0.5e-3,true,null]`,
		`{"a":"\u00e9"}`, " {\"a\" : 1} ", `{"a":1}{}`, `"<&>"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		want := reencode(raw)
		if got := JSON(raw); !bytes.Equal(got, want) {
			t.Fatalf("JSON(%q) = %q, the long way %q (canonical: %t)", raw, got, want, canonical(raw))
		}
	})
}
