package config_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/config"
)

// TestErrorRendering pins Error's text in every shape an *Error takes: a
// lone problem reads on the header's line, several read one a line below
// it, and a failure of the whole file reads on the header's line with
// any problems below.
func TestErrorRendering(t *testing.T) {
	t.Parallel()
	one := []config.Problem{{Line: 3, Key: "watch", Message: "want true or false"}}
	two := []config.Problem{{Line: 2, Key: "ledger", Message: "bad"}, {Key: "--http", Message: "worse"}}
	bare := []config.Problem{{Message: "needs auth.issuer"}}
	boom := errors.New("yaml: line 4: mapping values are not allowed")
	for _, tc := range []struct {
		e    config.Error
		want string
	}{
		{config.Error{Path: "c.yaml"}, "config c.yaml"},
		{config.Error{}, "config"},
		{config.Error{Path: "c.yaml", Problems: one}, "config c.yaml: line 3: watch: want true or false"},
		{config.Error{Problems: bare}, "config: needs auth.issuer"},
		{config.Error{Path: "c.yaml", Problems: two}, "config c.yaml\n  line 2: ledger: bad\n  --http: worse"},
		{config.Error{Problems: two}, "config\n  line 2: ledger: bad\n  --http: worse"},
		{config.Error{Path: "c.yaml", Err: boom}, "config c.yaml: yaml: line 4: mapping values are not allowed"},
		{config.Error{Err: boom}, "config: yaml: line 4: mapping values are not allowed"},
		{config.Error{Path: "c.yaml", Err: boom, Problems: one}, "config c.yaml: yaml: line 4: mapping values are not allowed\n  line 3: watch: want true or false"},
		{config.Error{Path: "c.yaml", Err: boom, Problems: two}, "config c.yaml: yaml: line 4: mapping values are not allowed\n  line 2: ledger: bad\n  --http: worse"},
	} {
		require.Equal(t, tc.want, tc.e.Error())
	}
	require.Equal(t, "line 3: watch: want true or false", one[0].String())
	require.Equal(t, "needs auth.issuer", bare[0].String())
}
