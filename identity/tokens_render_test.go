package identity_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/identity"
)

// TestTokenFileErrorRendering pins Error's text in every shape a
// *TokenFileError takes: every invalid entry on a line of its own below
// the header, a failure of the whole file on the header's line.
func TestTokenFileErrorRendering(t *testing.T) {
	t.Parallel()
	one := []identity.TokenProblem{{Line: 3, Key: "0123456789ab", Message: "empty subject"}}
	two := []identity.TokenProblem{{Line: 1, Message: "the key is not a SHA-256 hex digest"}, {Key: "0123456789ab", Message: "listed twice"}}
	boom := errors.New("open t.yaml: no such file or directory")
	for _, tc := range []struct {
		e    identity.TokenFileError
		want string
	}{
		{identity.TokenFileError{Path: "t.yaml"}, "tokens t.yaml"},
		{identity.TokenFileError{}, "tokens"},
		{identity.TokenFileError{Path: "t.yaml", Problems: one}, "tokens t.yaml\n  line 3: entry 0123456789ab…: empty subject"},
		{identity.TokenFileError{Problems: two}, "tokens\n  line 1: the key is not a SHA-256 hex digest\n  entry 0123456789ab…: listed twice"},
		{identity.TokenFileError{Path: "t.yaml", Err: boom}, "tokens t.yaml: open t.yaml: no such file or directory"},
		{identity.TokenFileError{Err: identity.ErrNoTokens}, "tokens: the file lists no token"},
		{identity.TokenFileError{Path: "t.yaml", Err: boom, Problems: two}, "tokens t.yaml: open t.yaml: no such file or directory\n  line 1: the key is not a SHA-256 hex digest\n  entry 0123456789ab…: listed twice"},
	} {
		require.Equal(t, tc.want, tc.e.Error())
	}
	require.Equal(t, "line 3: entry 0123456789ab…: empty subject", one[0].String())
}
