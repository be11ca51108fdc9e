package exactjson_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/exactjson"
)

// FuzzValue: what Value accepts, OPA's own reading of the same bytes gives
// the same value; what it refuses is not JSON, not UTF-8, or holds one of
// the readings two JSON readers may disagree on.
func FuzzValue(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1e100000}`, `{"a":1,"a":2}`, `"\ud800"`, `[1,{"b":[null,true,"\ud83d\ude00"]}]`, "\"\xff\"", `-0.5e-7`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		v, err := exactjson.Value(raw)
		if err == nil {
			require.True(t, json.Valid(raw))
			require.True(t, utf8.Valid(raw))
			want, err := ast.ValueFromReader(bytes.NewReader(raw))
			require.NoError(t, err)
			require.Equal(t, 0, want.Compare(v), "exactjson %v, OPA %v", v, want)
			return
		}
		var e *exactjson.Error
		require.True(t, errors.As(err, &e))
		require.Equal(t, !json.Valid(raw), e.Reason == exactjson.ReasonSyntax, "%v", err)
		if e.Reason == exactjson.ReasonUTF8 {
			require.False(t, utf8.Valid(raw))
		}
	})
}
