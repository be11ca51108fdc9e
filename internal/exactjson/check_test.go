package exactjson_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/exactjson"
)

// checkSeeds hold every refusal Value makes, in places where the order of
// the walk decides which one is reported.
var checkSeeds = []string{
	`{}`, `{"text":"hello"}`, `{"a":1e100000}`, `{"a":1,"a":2}`, `"\ud800"`,
	`[1,{"b":[null,true,"\ud83d\ude00"]}]`, "\"\xff\"", `-0.5e-7`, `not json`,
	`{"a":1,"\u0061":2}`, `{"a":1,"a":1e100000}`, `{"\ud800":1,"\ud800":2}`,
	`{"a":{"x":1,"x":2},"a":3}`, `123456789012345678901234567890`, `-1`, `1e-100001`,
	`{"k":"\u00e9","l":"\\"}`,
	bigObject(40, false), bigObject(40, true), bigObject(16, true), bigObject(17, true),
}

// bigObject is an object of n distinct keys, its last one repeated when
// dup.
func bigObject(n int, dup bool) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := range n {
		fmt.Fprintf(&b, `"k%d":%d,`, i, i)
	}
	if dup {
		fmt.Fprintf(&b, `"k%d":0,`, n-1)
	}
	b.WriteString(`"end":true}`)
	return b.String()
}

// checkAgrees: Check refuses exactly what Value refuses, with the same
// error.
func checkAgrees(t *testing.T, raw []byte) {
	_, verr := exactjson.Value(raw)
	cerr := exactjson.Check(raw)
	require.Equal(t, verr, cerr, "%q", raw)
}

func TestCheckAgreesWithValue(t *testing.T) {
	t.Parallel()
	refused := 0
	for _, s := range checkSeeds {
		checkAgrees(t, []byte(s))
		if exactjson.Check([]byte(s)) != nil {
			refused++
		}
	}
	assert.GreaterOrEqual(t, refused, 8, "the seeds exercise the refusals")
}

func FuzzCheck(f *testing.F) {
	for _, s := range checkSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkAgrees)
}

// TestCheckAllocatesNothingForCommonArguments: the check of a small
// object of plain keys builds nothing. (Not parallel: AllocsPerRun.)
func TestCheckAllocatesNothingForCommonArguments(t *testing.T) {
	raw := []byte(`{"text":"hello","n":42,"deep":{"list":[1,2.5,"x",null,true]},"e":"caf\u00e9"}`)
	require.NoError(t, exactjson.Check(raw))
	assert.Zero(t, testing.AllocsPerRun(20, func() { _ = exactjson.Check(raw) }))
}
