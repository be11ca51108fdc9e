package metabound_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/metabound"
)

type entry struct {
	k string
	v string
}

func mk(k string, v json.RawMessage) entry { return entry{k, string(v)} }

// TestBound: the rules engine.BoundMeta documents (its tests and fuzzer
// check them in full): not an object is nothing, the first occurrence of a
// key decides, values are compacted as sent.
func TestBound(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{``, `null`, `[1]`, `{"a":`, `{}`, "{\"a\":\"\xff\"}"} {
		require.Nil(t, metabound.Bound([]byte(raw), mk), raw)
	}
	got := metabound.Bound([]byte(`{ "a" : [1, 2.50] , "b":{"c":"\u00e9"}, "a": 3, "deep": [[[[1]]]] }`), mk)
	require.Equal(t, []entry{{"a", `[1,2.50]`}, {"b", `{"c":"\u00e9"}`}}, got)
}

// TestBoundLengthCountsNumbers: a value of numbers is measured by its
// compact length like any other, the delimiters between the numbers
// included: MaxValueLen bytes are kept, one more is dropped.
func TestBoundLengthCountsNumbers(t *testing.T) {
	t.Parallel()
	numbers := func(n int) string { // [1,1,...,1] of length n (n odd)
		b := []byte{'['}
		for len(b) < n-2 {
			b = append(b, '1', ',')
		}
		return string(append(b, '1', ']'))
	}
	at, over := numbers(metabound.MaxValueLen-1), numbers(metabound.MaxValueLen+1)
	require.Len(t, at, metabound.MaxValueLen-1)
	require.Len(t, over, metabound.MaxValueLen+1)
	got := metabound.Bound([]byte(`{"at":`+at+`,"over":`+over+`,"b":1.5e3}`), mk)
	require.Equal(t, []entry{{"at", at}, {"b", "1.5e3"}}, got)
}
