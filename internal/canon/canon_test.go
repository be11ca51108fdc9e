package canon

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestJSON(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want string }{
		{`{"b":1,"a":{"d":[1,2],"c":"x"}}`, `{"a":{"c":"x","d":[1,2]},"b":1}`},
		{" { \"a\" : 12345678901234567890.5 } ", `{"a":12345678901234567890.5}`},
		{`{"h":"<&>"}`, `{"h":"<&>"}`},
		{`not json`, `not json`},
	}
	for _, c := range cases {
		require.Equal(t, c.want, string(JSON([]byte(c.in))), c.in)
	}
	require.Equal(t, SHA256([]byte(`{"a":1,"b":2}`)), SHA256([]byte(`{"b":2, "a":1}`)))
	require.NotEqual(t, SHA256([]byte(`{"a":1}`)), SHA256([]byte(`{"a":1.0}`)))
}
