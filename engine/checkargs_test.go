package engine

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var checkArgsSeeds = []string{
	``, `   `, `null`, `[1,2]`, `"text"`, `{}`, ` {"text":"hello"} `, `{"a":1,"a":2}`,
	`{"a":1e100000}`, `{"s":"\ud800"}`, "{\"s\":\"\xff\"}", `{"a":`, `{"a":1}x`,
	`{"deep":{"list":[1,2.5,"x",null,true,{"k":"v","k2":-0.5e-7}]}}`,
}

// checkArgsAgrees: CheckArguments, the memoised path's check, refuses
// exactly what building the input refuses, with the same error.
func checkArgsAgrees(t *testing.T, raw []byte) {
	_, want := argumentsValue(json.RawMessage(raw))
	require.Equal(t, want, CheckArguments(json.RawMessage(raw)), "%q", raw)
}

func TestCheckArgumentsAgreesWithInput(t *testing.T) {
	t.Parallel()
	refused := 0
	for _, s := range checkArgsSeeds {
		checkArgsAgrees(t, []byte(s))
		if CheckArguments(json.RawMessage(s)) != nil {
			refused++
		}
	}
	assert.Equal(t, 4, refused, "dup key, number, surrogate, UTF-8")
}

func FuzzCheckArguments(f *testing.F) {
	for _, s := range checkArgsSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkArgsAgrees)
}

// TestCheckArgumentsAllocatesNothing: the check a memoised decision makes
// on common arguments builds nothing. (Not parallel: AllocsPerRun.)
func TestCheckArgumentsAllocatesNothing(t *testing.T) {
	raw := json.RawMessage(`{"text":"hello","n":3}`)
	assert.Zero(t, testing.AllocsPerRun(20, func() { _ = CheckArguments(raw) }))
}
