package identity_test

import (
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/toolgate/toolgate/identity"
)

// FuzzCallerFromClaims: any claims set either is refused or becomes a
// caller with a non-empty subject whose claims the policy engine takes
// whole (what the input document holds is what was decided on).
func FuzzCallerFromClaims(f *testing.F) {
	for _, s := range []string{
		`{"sub":"a","roles":["x"],"n":1.5e3}`,
		`{"sub":"a","roles":"x y","realm_access":{"roles":["r"]}}`,
		`{"sub":"a","sub":"b"}`,
		`{"sub":"a","n":1e99999}`,
		`{"sub":"a","d":{"a":{"b":{"c":{"d":1}}}}}`,
		`[]`, `{"sub":7}`, `{"sub":"\u00e9"}`,
	} {
		f.Add([]byte(s), "realm_access.roles")
	}
	f.Fuzz(func(t *testing.T, payload []byte, rolesClaim string) {
		c, err := identity.CallerFromClaims(payload, identity.Settings{RolesClaim: rolesClaim})
		if err != nil {
			return
		}
		if c.Subject == "" {
			t.Fatal("accepted with an empty subject")
		}
		if len(c.Claims) > 32 {
			t.Fatalf("%d claims kept", len(c.Claims))
		}
		if _, err := ast.InterfaceToValue(c.Claims); err != nil {
			t.Fatalf("claims the engine cannot take: %v", err)
		}
	})
}
