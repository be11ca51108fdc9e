package jsonx_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/jsonx"
)

// TestMarshalKeepsHTMLCharacters: <, > and & keep their spelling in Go
// strings, map keys and raw values; everything else is json.Marshal's.
func TestMarshalKeepsHTMLCharacters(t *testing.T) {
	t.Parallel()
	for _, v := range []any{
		"<&>",
		map[string]string{"a&b": "<x>"},
		map[string]json.RawMessage{"k": json.RawMessage(` {"<": [ "&" ] } `)},
		struct {
			S string `json:"s"`
		}{"\u2028\"\\\x01é"},
		[]any{1.5, nil, true},
	} {
		got, err := jsonx.Marshal(v)
		require.NoError(t, err)
		std, err := json.Marshal(v)
		require.NoError(t, err)
		assert.NotContains(t, string(got), `\u003c`)
		assert.NotContains(t, string(got), `\u0026`)
		assert.NotContains(t, string(got), `\u003e`)
		want := string(std)
		for esc, c := range map[string]string{`\u003c`: "<", `\u003e`: ">", `\u0026`: "&"} {
			want = strings.ReplaceAll(want, esc, c)
		}
		assert.Equal(t, want, string(got), "%#v", v)
	}
	_, err := jsonx.Marshal(func() {})
	require.Error(t, err)
}

func ExampleMarshal() {
	b, _ := jsonx.Marshal(map[string]json.RawMessage{"a": json.RawMessage(`"<&>"`)})
	fmt.Println(string(b))
	// Output: {"a":"<&>"}
}
