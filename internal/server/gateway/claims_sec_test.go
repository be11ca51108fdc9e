package gateway_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/identity"
	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/server/gateway"
	"github.com/toolgate/toolgate/internal/testkit/oidctest"
)

// suspendedRule is a deny rule over a claim that must see the claim whole.
const suspendedRule = `package toolgate.call

deny contains "suspended" if "suspended" in input.caller.claims.groups
`

// jwksIssuer signs access tokens with a key published in a JWKS file.
type jwksIssuer struct{ *oidctest.JWKSKey }

func newJWKSIssuer(t *testing.T) *jwksIssuer {
	t.Helper()
	return &jwksIssuer{oidctest.NewJWKSKey(t)}
}

// sign signs claims (a JSON object's members, without braces) plus iss,
// aud, iat and exp.
func (i *jwksIssuer) sign(t *testing.T, iss, aud, members string) string {
	t.Helper()
	now := time.Now().Unix()
	return i.Sign(t, fmt.Sprintf(`{"iss":%q,"aud":%q,"iat":%d,"exp":%d,%s}`, iss, aud, now, now+3600, members))
}

// guids is n distinct GUID-shaped strings, then the extra ones, as a JSON
// array: an Entra ID groups claim.
func guids(n int, extra ...string) string {
	g := make([]string, 0, n+len(extra))
	for i := range n {
		g = append(g, fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i))
	}
	b, _ := json.Marshal(append(g, extra...))
	return string(b)
}

// TestDenyRulesSeeWholeClaims: a deny rule over
// the caller's claims refuses the suspended user whatever the shape of the
// claims: a groups claim of 200 GUIDs (over 4096 bytes) and a groups claim
// that is the 33rd member both reach the policy whole, from real signed
// JWTs and from the tokens file, through the served front door. Before,
// claims were bounded like _meta and the rule let the user through.
func TestDenyRulesSeeWholeClaims(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	reg, pol := bundledCopy(t, dir, "")
	require.NoError(t, os.WriteFile(filepath.Join(pol, "suspended.rego"), []byte(suspendedRule), 0o600))
	iss := newJWKSIssuer(t)
	const issuer = "https://login.example.com"

	var many strings.Builder
	for i := range 32 {
		fmt.Fprintf(&many, `"c%02d":%d,`, i, i)
	}
	big := guids(200, "suspended")
	require.Greater(t, len(big), 4096)
	claimsFile := map[string]identity.TokenEntry{
		identity.HashToken("tf-big"):  {Subject: "tf-big", Claims: map[string]any{"groups": json.RawMessage(big)}},
		identity.HashToken("tf-33rd"): {Subject: "tf-33rd", Claims: map[string]any{}},
		identity.HashToken("tf-ok"):   {Subject: "tf-ok", Claims: map[string]any{"groups": []any{"staff"}}},
	}
	for i := range 32 {
		claimsFile[identity.HashToken("tf-33rd")].Claims[fmt.Sprintf("c%02d", i)] = i
	}
	claimsFile[identity.HashToken("tf-33rd")].Claims["groups"] = []any{"suspended"}
	for k, e := range claimsFile { // through JSON: RawMessage becomes a list
		b, _ := json.Marshal(e.Claims)
		var m map[string]any
		require.NoError(t, json.Unmarshal(b, &m))
		e.Claims = m
		claimsFile[k] = e
	}
	tb, err := json.Marshal(claimsFile)
	require.NoError(t, err)
	tokens := filepath.Join(dir, "tokens.json")
	require.NoError(t, os.WriteFile(tokens, tb, 0o600))

	port := oidctest.FreePort(t)
	g := startIdentity(t, gateway.Config{Stdout: &syncBuffer{}, Serve: config.Serve{
		Registry: reg, Policy: pol, Tokens: tokens,
		Auth: identity.Settings{Issuer: issuer, JWKS: iss.Path},
	}}, port)
	g.keysLoaded(t)

	for _, tc := range []struct {
		name, token string
		suspended   bool
	}{
		{"JWT, 200 GUIDs and suspended", iss.sign(t, issuer, g.resource, `"sub":"big","groups":`+big), true},
		{"JWT, groups the 33rd claim", iss.sign(t, issuer, g.resource, `"sub":"late",`+many.String()+`"groups":["suspended"]`), true},
		{"JWT, not suspended", iss.sign(t, issuer, g.resource, `"sub":"fine","groups":`+guids(200)), false},
		{"tokens file, 200 GUIDs and suspended", "tf-big", true},
		{"tokens file, groups the 33rd claim", "tf-33rd", true},
		{"tokens file, not suspended", "tf-ok", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs, err := connectToken(t, g.url, "2025-11-25", tc.token)
			require.NoError(t, err)
			text, isError := callText(t, cs, "count", map[string]any{"key": tc.name})
			if tc.suspended {
				require.True(t, isError, text)
				require.Contains(t, text, "suspended", "the deny rule saw the groups claim")
			} else {
				require.False(t, isError, text)
				require.Equal(t, "1", text, "the call ran")
			}
		})
	}
}
