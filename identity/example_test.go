package identity_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/toolgate/toolgate/identity"
)

// A claims set as a Keycloak access token carries it: the roles are under
// realm_access.roles.
func ExampleCallerFromClaims() {
	payload := []byte(`{"iss":"https://sso.example.com/realms/acme","sub":"f3a1","aud":"https://tools.example.com/mcp",
		"exp":1900000000,"realm_access":{"roles":["manager","reader"]},"email":"ann@example.com","scope":"openid tools"}`)
	caller, err := identity.CallerFromClaims(payload, identity.Settings{RolesClaim: "realm_access.roles"})
	if err != nil {
		panic(err)
	}
	fmt.Println(caller.Subject, caller.Roles, caller.Claims["email"], caller.Claims["exp"])
	// Output: f3a1 [manager reader] ann@example.com 1900000000
}

// The answers a transport gives, from the Chain's errors.
func ExampleChain() {
	settings := identity.Settings{Issuer: "https://sso.example.com", Resource: "https://tools.example.com/mcp"}
	meta := identity.MetadataURL(settings.Resource)
	chain := identity.Chain{Tokens: fakeTokens{"ops-token": "ops"}, JWT: verifierFunc(nil)}

	for _, authz := range []string{"Bearer ops-token", "", "Basic b3BzOm9wcw=="} {
		r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		if authz != "" {
			r.Header.Set("Authorization", authz)
		}
		caller, err := chain.Authenticate(r.Context(), r)
		if err != nil {
			status, challenge := identity.Answer(err, meta)
			var ite *identity.InvalidTokenError
			if errors.As(err, &ite) {
				fmt.Printf("%d %s (log: %s)\n", status, challenge, ite.Reason)
				continue
			}
			fmt.Println(status, challenge)
			continue
		}
		fmt.Println("caller", caller.Subject)
	}
	// Output:
	// caller ops
	// 401 Bearer resource_metadata="https://tools.example.com/.well-known/oauth-protected-resource/mcp"
	// 401 Bearer error="invalid_token", resource_metadata="https://tools.example.com/.well-known/oauth-protected-resource/mcp" (log: the Authorization header is not a Bearer token)
}

func ExampleHashToken() {
	// A tokens file lists the digest of each token, never the token.
	fmt.Printf("%s:\n  subject: alice\n  roles: [manager]\n", identity.HashToken("test"))
	// Output:
	// 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08:
	//   subject: alice
	//   roles: [manager]
}
