package exactjson

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var validSeeds = []string{
	``, ` `, `{}`, `[]`, `{"a":[1,-0,0.5,1e5,1E+5,-1.5e-5,true,false,null,"\u00e9\n\"\\/"]}`,
	`01`, `1.`, `.5`, `-`, `1e`, `1e+`, `+1`, `tru`, `nul`, `"\x"`, `"\u12"`, `"\u12g4"`,
	"\"\x01\"", "\"\xff\"", `{"a" 1}`, `{"a":1,}`, `[1,]`, `[1 2]`, `{1:2}`, `"abc`, `{} {}`,
	`  [ 1 , { "k" : "v" } ]  `, `[`, `{"a":`, `{"a":1`, `nullx`,
}

// TestValidIsJSONValid: valid answers as json.Valid does, nesting limit
// included.
func TestValidIsJSONValid(t *testing.T) {
	t.Parallel()
	for _, s := range validSeeds {
		require.Equal(t, json.Valid([]byte(s)), valid([]byte(s)), "%q", s)
	}
	for _, n := range []int{maxNesting - 1, maxNesting, maxNesting + 1} {
		for _, open := range []string{"[", `{"a":`} {
			closing := "]"
			if open != "[" {
				closing = "}"
			}
			s := strings.Repeat(open, n) + "1" + strings.Repeat(closing, n)
			require.Equal(t, json.Valid([]byte(s)), valid([]byte(s)), "depth %d of %s", n, open)
		}
	}
}

func FuzzValid(f *testing.F) {
	for _, s := range validSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		require.Equal(t, json.Valid(b), valid(b), "%q", b)
	})
}
