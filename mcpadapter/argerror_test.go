package mcpadapter_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/toolgate/toolgate/toolcall"
)

// TestArgumentErrorText: the caller's answer is docs/contract.md §5's text from the
// row's name and type alone; the log's Error() adds the cause when there
// is one, and Unwrap reaches it. (A mutant found by scripts/mutate.)
func TestArgumentErrorText(t *testing.T) {
	t.Parallel()
	cause := errors.New("jsonschema: /idReward: expected integer")
	for _, tc := range []struct {
		err       toolcall.ArgumentError
		message   string
		wantCause bool
	}{
		{toolcall.ArgumentError{Problem: toolcall.ArgMissing, Name: "idReward"}, "Error: Missing required argument 'idReward'.", false},
		{toolcall.ArgumentError{Problem: toolcall.ArgInvalid, Name: "idReward", Type: "int", Err: cause}, "Error: Invalid value for argument 'idReward': expected int.", true},
		{toolcall.ArgumentError{Problem: toolcall.ArgInvalid, Name: "price", Type: "Money", Internal: true, Err: cause}, "Error: Invalid value for argument 'price'.", true},
		{toolcall.ArgumentError{Problem: toolcall.ArgUnknown, Name: "rewardId"}, "Error: Unknown argument 'rewardId'.", false},
	} {
		require.Equal(t, tc.message, tc.err.Message())
		if tc.wantCause {
			require.Equal(t, tc.message+" ("+cause.Error()+")", tc.err.Error())
			require.ErrorIs(t, &tc.err, cause)
		} else {
			require.Equal(t, tc.message, tc.err.Error())
		}
	}
}
