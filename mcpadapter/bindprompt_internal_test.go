package mcpadapter

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

type selfDecoding struct{}

func (*selfDecoding) UnmarshalJSON([]byte) error { return nil }

type recursive struct {
	Next     *recursive
	Children []recursive
}

// TestBindsPromptly: a Go method binds on the call's goroutine only when no
// type in its parameter decodes itself (json.Unmarshaler,
// encoding.TextUnmarshaler, found at any depth, by value or pointer);
// another Method is guarded as before.
func TestBindsPromptly(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		fn   any
		want bool
	}{
		{"plain", func(context.Context, struct {
			Text  string         `json:"text"`
			N     *int           `json:"n"`
			Tags  []string       `json:"tags"`
			Opts  map[string]any `json:"opts"`
			Raw   any            `json:"raw"`
			Inner struct{ A [2]float64 }
			Tree  recursive
		}) (string, error) {
			return "", nil
		}, true},
		{"raw message", func(context.Context, struct{ R json.RawMessage }) (string, error) { return "", nil }, false},
		{"time", func(context.Context, struct{ At time.Time }) (string, error) { return "", nil }, false},
		{"text unmarshaler in a map", func(context.Context, struct{ M map[string]net.IP }) (string, error) { return "", nil }, false},
		{"pointer receiver, nested", func(context.Context, struct{ X []struct{ S selfDecoding } }) (string, error) { return "", nil }, false},
	} {
		gm, err := newGoMethod(c.fn)
		if err != nil {
			t.Fatal(err)
		}
		assert.Equal(t, c.want, bindsPromptly(gm), c.name)
	}
	assert.False(t, bindsPromptly(struct{ Method }{}), "a Method that is not a Go method")
	assert.True(t, plainDecoded(reflect.TypeFor[recursive](), map[reflect.Type]bool{}), "recursive types end")
}

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
