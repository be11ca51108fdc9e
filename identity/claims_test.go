package identity_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/identity"
)

// TestCallerFromClaimsNesting: the claims decoder follows 32 levels of
// nesting below the claims set, in objects and in arrays alike, and refuses
// a 33rd (an invalid token, not a panic or a silent cut).
func TestCallerFromClaimsNesting(t *testing.T) {
	t.Parallel()
	nest := map[string]func(n int) string{
		"objects": func(n int) string { return strings.Repeat(`{"a":`, n-1) + `{}` + strings.Repeat(`}`, n-1) },
		"arrays":  func(n int) string { return strings.Repeat(`[`, n) + strings.Repeat(`]`, n) },
	}
	for kind, value := range nest {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			payload := func(n int) []byte { return []byte(`{"sub":"alice","deep":` + value(n) + `}`) }
			c, err := identity.CallerFromClaims(payload(32), identity.Settings{})
			require.NoError(t, err, "32 levels")
			require.Equal(t, "alice", c.Subject)

			_, err = identity.CallerFromClaims(payload(33), identity.Settings{})
			var inv *identity.InvalidTokenError
			require.True(t, errors.As(err, &inv), "33 levels: %v", err)
			require.Equal(t, "claims", inv.Reason)
			require.ErrorContains(t, err, "nesting deeper than 32 levels")
		})
	}
}
