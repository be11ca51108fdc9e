package identity_test

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/identity"
	"github.com/toolgate/toolgate/toolcall"
)

// TestStatic: the stdio caller is nobody without a subject, and keeps no
// alias of the roles it was given.
func TestStatic(t *testing.T) {
	t.Parallel()
	require.Nil(t, identity.Static("", []string{"admin"}))
	roles := []string{"manager"}
	c := identity.Static("max", roles)
	require.Equal(t, &toolcall.Caller{Subject: "max", Roles: []string{"manager"}}, c)
	roles[0] = "admin"
	require.Equal(t, []string{"manager"}, c.Roles)
	require.Equal(t, []string{}, identity.Static("max", nil).Roles, "no roles is an empty list, never null")
}

type fixedVerifier map[string]*toolcall.Caller

func (v fixedVerifier) Verify(_ context.Context, token string) (*toolcall.Caller, error) {
	if c, ok := v[token]; ok {
		return c, nil
	}
	return nil, identity.ErrInvalidToken
}

// TestChainIdentifySource: Identify says which source answered, the
// tokens file first, so that the same subject from two sources is two
// owners.
func TestChainIdentifySource(t *testing.T) {
	t.Parallel()
	tokens, err := identity.NewTokens(map[string]identity.TokenEntry{identity.HashToken("file-alice"): {Subject: "alice"}})
	require.NoError(t, err)
	chain := identity.Chain{Tokens: tokens, JWT: fixedVerifier{"jwt-alice": {Subject: "alice"}}, AllowAnonymous: true}
	for token, want := range map[string]identity.Source{"file-alice": identity.SourceTokens, "jwt-alice": identity.SourceJWT, "": identity.SourceNone} {
		r := httptest.NewRequest("POST", "/mcp", nil)
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		c, src, err := chain.Identify(context.Background(), r)
		require.NoError(t, err, token)
		require.Equal(t, want, src, token)
		if token != "" {
			require.Equal(t, "alice", c.Subject)
		}
	}
	r := httptest.NewRequest("POST", "/mcp", nil)
	r.Header.Set("Authorization", "Bearer unknown")
	_, src, err := chain.Identify(context.Background(), r)
	require.ErrorIs(t, err, identity.ErrInvalidToken)
	require.Equal(t, identity.SourceNone, src)
}
