package mcpadapter

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
)

// decodeSlow is decodeValue without its shortcut.
func decodeSlow(v []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	var val any
	err := dec.Decode(&val)
	return val, err
}

// TestDecodeValue: plain strings take the shortcut; escapes, control
// characters, invalid UTF-8 and anything but one string do not; both
// ways give the same value.
func TestDecodeValue(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in    string
		plain bool
	}{
		{`"hello"`, true}, {`""`, true}, {`"<&> é ✓"`, true}, {`"a\"b"`, false}, {`"a\u0041"`, false}, {"\"a\tb\"", false},
		{"\"\xff\"", false}, {` "a"`, false}, {`"a" `, false}, {`"a" "b"`, false}, {`"`, false}, {`12`, false}, {`{"a":"b"}`, false},
	} {
		assert.Equal(t, c.plain, plainString([]byte(c.in)), c.in)
		want, werr := decodeSlow([]byte(c.in))
		got, gerr := decodeValue([]byte(c.in))
		assert.Equal(t, werr == nil, gerr == nil, c.in)
		assert.Equal(t, want, got, c.in)
	}
}

// FuzzDecodeValue: a differential test of decodeValue's shortcut against
// the decoder on arbitrary bytes.
//
//	go test -run '^$' -fuzz FuzzDecodeValue -fuzztime 10s ./mcpadapter
func FuzzDecodeValue(f *testing.F) {
	for _, s := range []string{`"hello"`, `"a\"b"`, "\"\xff\"", `"a" "b"`, `1.5e3`, `{"a":[1]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		want, werr := decodeSlow(v)
		got, gerr := decodeValue(v)
		if (werr == nil) != (gerr == nil) || !reflect.DeepEqual(want, got) {
			t.Fatalf("decodeValue(%q) = %#v, %v; the decoder %#v, %v", v, got, gerr, want, werr)
		}
	})
}
