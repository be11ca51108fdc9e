package exactjson_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/exactjson"
)

func TestValue(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in     string
		reason string // empty: accepted
	}{
		{`{}`, ""},
		{` {"a": [1, 2.5, -3e10, "x\u00e9\ud83d\ude00", true, false, null, {}]} `, ""},
		{`{"url":"http://169.254.169.254/","x":1e100000}`, exactjson.ReasonNumber},
		{`{"x":-1e99999999999}`, exactjson.ReasonNumber},
		{`{"a":{"b":[1e4567890]}}`, exactjson.ReasonNumber},
		{`{"url":"a","url":"b"}`, exactjson.ReasonDupKey},
		{`{"url":"a","u\u0072l":"b"}`, exactjson.ReasonDupKey},
		{`{"a":{"k":1,"k":1}}`, exactjson.ReasonDupKey},
		{`{"a":"\ud800"}`, exactjson.ReasonSurrogate},
		{`{"a":"\udc00\ud800"}`, exactjson.ReasonSurrogate},
		{`{"a":"\ud800\u0041"}`, exactjson.ReasonSurrogate},
		{`{"\ud800":1}`, exactjson.ReasonSurrogate},
		{"{\"a\":\"\xff\"}", exactjson.ReasonUTF8},
		{`{"a":1} x`, exactjson.ReasonSyntax},
		{`{"a":`, exactjson.ReasonSyntax},
	} {
		v, err := exactjson.Value([]byte(tc.in))
		if tc.reason == "" {
			require.NoError(t, err, tc.in)
			want, err := ast.ValueFromReader(bytes.NewReader([]byte(tc.in)))
			require.NoError(t, err)
			require.Equal(t, 0, want.Compare(v), "%s: got %v want %v", tc.in, v, want)
			continue
		}
		var e *exactjson.Error
		require.ErrorAs(t, err, &e, tc.in)
		require.Equal(t, tc.reason, e.Reason, tc.in)
		require.True(t, errors.Is(err, exactjson.ErrInexact))
		require.NotContains(t, err.Error(), "169.254")
	}
}

func TestGoValue(t *testing.T) {
	t.Parallel()
	v, err := exactjson.GoValue(map[string]any{"a": []any{1, 2.5, "s", json.Number("7"), nil, true}, "r": []string{"x"}})
	require.NoError(t, err)
	require.Equal(t, 0, ast.MustParseTerm(`{"a":[1,2.5,"s",7,null,true],"r":["x"]}`).Value.Compare(v))
	for _, tc := range []struct {
		in     any
		reason string
		path   string
	}{
		{map[string]any{"level": math.Inf(1)}, exactjson.ReasonNotFinite, "level"},
		{map[string]any{"a": []any{math.NaN()}}, exactjson.ReasonNotFinite, "a.0"},
		{map[string]any{"n": json.Number("1e100000")}, exactjson.ReasonNumber, "n"},
		{map[string]any{"s": "\xff"}, exactjson.ReasonUTF8, "s"},
		{map[string]any{"m": map[any]any{1: 2}}, exactjson.ReasonGoType, "m"},
		{map[string]any{"f": func() {}}, exactjson.ReasonGoType, "f"},
	} {
		_, err := exactjson.GoValue(tc.in)
		var e *exactjson.Error
		require.ErrorAs(t, err, &e, "%v", tc.in)
		require.Equal(t, tc.reason, e.Reason)
		require.Equal(t, tc.path, e.Path)
	}
}
