package config_test

import (
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/identity"
	"github.com/toolgate/toolgate/internal/config"
)

// TestAuthSection: the auth section decodes into identity.Settings (a
// relative jwks file against the file's directory), and the flags win
// over it: --audience replaces the file's audiences.
func TestAuthSection(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	cfg, dir := writeConfig(t, `
auth:
  issuer: https://login.example.com/realms/acme
  jwks: keys/jwks.json
  resource: https://tools.example.com/mcp
  audiences: [https://tools.example.com/mcp, toolgate]
  subject_claim: preferred_username
  roles_claim: realm_access.roles
  scopes_supported: [tools:read, tools:call]
  allow_anonymous: true
`)
	s, err := config.LoadServe([]string{"--config", cfg}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, identity.Settings{
		Issuer:          "https://login.example.com/realms/acme",
		JWKS:            filepath.Join(dir, "keys", "jwks.json"),
		Resource:        "https://tools.example.com/mcp",
		Audiences:       []string{"https://tools.example.com/mcp", "toolgate"},
		SubjectClaim:    "preferred_username",
		RolesClaim:      "realm_access.roles",
		ScopesSupported: []string{"tools:read", "tools:call"},
	}, s.Auth)
	assert.True(t, s.AllowAnonymous)

	s, err = config.LoadServe([]string{"--config", cfg, "--issuer", "http://127.0.0.1:9000", "--jwks", "https://keys.example.com/jwks",
		"--resource", "https://t.example/mcp", "--audience", "a1", "--audience", "a2"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, "http://127.0.0.1:9000", s.Auth.Issuer)
	assert.Equal(t, "https://keys.example.com/jwks", s.Auth.JWKS)
	assert.Equal(t, "https://t.example/mcp", s.Auth.Resource)
	assert.Equal(t, []string{"a1", "a2"}, s.Auth.Audiences)
	assert.Equal(t, "realm_access.roles", s.Auth.RolesClaim, "a setting without a flag stays the file's")

	s, err = config.LoadServe([]string{"--issuer", "https://login.example.com", "--allow-anonymous"}, io.Discard)
	require.NoError(t, err)
	assert.True(t, s.AllowAnonymous)
	assert.Empty(t, s.Auth.Resource, "the default resource comes from the address listened at, in the gateway")
}

// TestAuthProblems: every problem of the auth section at once, each with
// its line or its key.
func TestAuthProblems(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, file string
		args       []string
		want       []string
	}{
		{"kinds and unknown keys", "auth:\n  issuer: [x]\n  audience: a\n  allow_anonymous: yes please\n  roles_claim: ''\n  issuer: y\n", nil, []string{
			"line 2: auth.issuer: want a URL such as https://login.example.com/realms/acme",
			`line 3: unknown key "audience" in auth (did you mean "audiences"? known: issuer, jwks, resource, audiences, subject_claim, roles_claim, scopes_supported, allow_anonymous)`,
			"line 4: auth.allow_anonymous: want true or false",
			"line 5: auth.roles_claim: want a claim path such as realm_access.roles",
			"line 6: auth.issuer: set twice",
		}},
		{"not a mapping", "auth: https://login.example.com\n", nil, []string{
			"line 1: auth: want a mapping of issuer, jwks, resource, audiences, subject_claim, roles_claim, scopes_supported, allow_anonymous",
		}},
		{"settings that need an issuer", "auth:\n  roles_claim: groups\n  allow_anonymous: true\n", nil, []string{
			"auth.allow_anonymous: needs auth.issuer (--issuer): without it a request without a token is nobody anyway",
			"auth.resource, auth.audiences, auth.*_claim and auth.scopes_supported need auth.issuer",
		}},
		{"jwks without issuer, http issuer off loopback", "", []string{"--jwks", "keys.json"}, []string{
			"auth.jwks needs auth.issuer: a token's iss is checked against it",
		}},
		{"plain http off loopback", "", []string{"--issuer", "http://login.example.com", "--resource", "tools#x"}, []string{
			`auth.issuer: "http://login.example.com": want https (http only on a loopback host)`,
			`auth.resource "tools#x": want an absolute URI without a fragment (RFC 8707)`,
		}},
		{"issuer on every address without a resource", "", []string{"--http", "[::]:8080", "--issuer", "https://login.example.com"}, []string{
			"auth.resource: required when listening on every address (http [::]:8080): the default would advertise http://[::]:8080/mcp as this server's URI; set it (--resource) to the URI clients use",
		}},
		{"issuer on 0.0.0.0 without a resource", "", []string{"--http", "0.0.0.0:8080", "--issuer", "https://login.example.com"}, []string{
			"auth.resource: required when listening on every address (http 0.0.0.0:8080): the default would advertise http://0.0.0.0:8080/mcp as this server's URI; set it (--resource) to the URI clients use",
		}},
		{"issuer on no host without a resource", "", []string{"--http", ":8080", "--issuer", "https://login.example.com"}, []string{
			"auth.resource: required when listening on every address (http :8080): the default would advertise http://:8080/mcp as this server's URI; set it (--resource) to the URI clients use",
		}},
		{"stdio only", "", []string{"--stdio", "--issuer", "https://login.example.com"}, []string{
			"auth: JWT callers are for HTTP: give an address (http, --http)",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := tc.args
			if tc.file != "" {
				cfg, _ := writeConfig(t, tc.file)
				args = append([]string{"--config", cfg}, args...)
			}
			_, err := config.LoadServe(append(args, "--ledger", "memory"), io.Discard)
			got := problems(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestAuthFlagsInUsage(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	_, _ = config.LoadServe([]string{"-h"}, &b)
	for _, f := range []string{"-issuer URL", "-jwks FILE", "-resource URI", "-audience AUD", "-allow-anonymous"} {
		assert.Contains(t, b.String(), "  "+f+"\n")
	}
}
