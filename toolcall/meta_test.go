package toolcall

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAppendString(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "a", "\"\\", "\x00\x1f\x7f", "\n\r\t\b\f", "é😀\u2028", "<&>"} {
		got := appendString(nil, s)
		var back string
		require.NoError(t, json.Unmarshal(got, &back), "%q", got)
		require.Equal(t, s, back)
	}
}
