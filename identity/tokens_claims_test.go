package identity_test

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/identity"
)

// TestTokensFileRefusesClaimsAPolicyCannotSee: a tokens file whose
// claims hold .inf or .nan (YAML), a number beyond OPA's range (JSON), or
// anything else a policy's input cannot hold exactly used to load, and the
// claims reached policies as {} (or not as written). The file is refused at
// load, naming the entry by its digest's prefix and line, never the token.
func TestTokensFileRefusesClaimsAPolicyCannotSee(t *testing.T) {
	t.Parallel()
	const token = "s3cr3t-token-value"
	h := identity.HashToken(token)
	for _, tc := range []struct {
		name, file, content, want string
	}{
		{"yaml inf", "t.yaml", h + ":\n  subject: alice\n  claims: {level: .inf}\n", "claims.level: cannot be represented in a policy's input: a number that is not finite (NaN or infinity)"},
		{"yaml -inf nested", "t.yaml", h + ":\n  subject: alice\n  claims: {limits: {max: [1, -.Inf]}}\n", "claims.limits.max.1: cannot be represented in a policy's input: a number that is not finite (NaN or infinity)"},
		{"yaml nan", "t.yaml", h + ": {subject: alice, claims: {score: .NaN}}\n", "claims.score: cannot be represented in a policy's input: a number that is not finite (NaN or infinity)"},
		{"yaml non-string key", "t.yaml", h + ": {subject: alice, claims: {m: {1: a}}}\n", "claims.m: cannot be represented in a policy's input: a value that is not plain JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := identity.LoadTokens(writeFile(t, tc.file, tc.content))
			var tfe *identity.TokenFileError
			require.ErrorAs(t, err, &tfe)
			require.Len(t, tfe.Problems, 1)
			assert.Equal(t, "line 1: entry "+h[:12]+"…: "+tc.want, tfe.Problems[0].String())
			assert.NotContains(t, err.Error(), token)
			assert.False(t, strings.Contains(err.Error(), h[12:]), "only a prefix of the digest")
		})
	}
	// NewTokens refuses such claims too.
	_, err := identity.NewTokens(map[string]identity.TokenEntry{h: {Subject: "a", Claims: map[string]any{"x": math.Inf(1)}}})
	require.ErrorContains(t, err, "claims.x: cannot be represented")
	// Plain claims load.
	tk, err := identity.LoadTokens(writeFile(t, "ok.yaml", h+": {subject: alice, claims: {level: 2.5, big: 12345678901234567890, tags: [a, b]}}\n"))
	require.NoError(t, err)
	require.Equal(t, 1, tk.Len())
}
