package engine

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/stretchr/testify/require"
)

// TestMetaValueIsOPAsReading: the input document's _meta is what OPA's
// own decoder reads from the kept values, also where the one-pass
// conversion refuses (a key sent twice inside a value, a lone surrogate).
func TestMetaValueIsOPAsReading(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		`{"festi/runId":"r-1"}`,
		`{"m":{"a":1,"a":2},"s":"\ud800","x":[1.5e3,-0,12345678901234567890.5],"t":true,"n":null}`,
		`{"e":"caf\u00e9","d":{"k":{"k":["\ud83d\ude00"]}}}`,
	} {
		m := BoundMeta(json.RawMessage(raw))
		require.Positive(t, m.Len())
		got, err := metaAST(m)
		require.NoError(t, err)
		out, _ := m.MarshalJSON()
		want, err := ast.ValueFromReader(bytes.NewReader(out))
		require.NoError(t, err)
		require.Equal(t, 0, want.Compare(got), "%s: %v, OPA %v", raw, got, want)
	}
}
