package methods

import (
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
		assert.Equal(t, c.want, BindsPromptly(gm), c.name)
	}
	assert.False(t, BindsPromptly(struct{ Method }{}), "a Method that is not a Go method")
	assert.True(t, plainDecoded(reflect.TypeFor[recursive](), map[reflect.Type]bool{}), "recursive types end")
}
