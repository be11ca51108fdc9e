package identity_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/identity"
	"github.com/toolgate/toolgate/toolcall"
)

func TestBearerToken(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		headers []string
		token   string
		invalid bool
	}{
		{"none", nil, "", false},
		{"bearer", []string{"Bearer abc.def-_~+/=="}, "abc.def-_~+/==", false},
		{"scheme case", []string{"bearer abc"}, "abc", false},
		{"basic", []string{"Basic dXNlcjpwYXNz"}, "", true},
		{"empty", []string{"Bearer "}, "", true},
		{"two headers", []string{"Bearer a", "Bearer b"}, "", true},
		{"space inside", []string{"Bearer a b"}, "", true},
		{"tab inside", []string{"Bearer a\tb"}, "", true},
		{"too long", []string{"Bearer " + strings.Repeat("a", identity.MaxTokenLen+1)}, "", true},
	}
	for _, tt := range tests {
		r := httptest.NewRequest(http.MethodGet, "/mcp", nil)
		for _, h := range tt.headers {
			r.Header.Add("Authorization", h)
		}
		tok, err := identity.BearerToken(r)
		if tok != tt.token || errors.Is(err, identity.ErrInvalidToken) != tt.invalid {
			t.Errorf("%s: %q %v", tt.name, tok, err)
		}
	}
}

// TestChainWithoutJWT: without JWT, no token is nobody and an unknown token
// is invalid; with JWT and AllowAnonymous, no token is nobody.
func TestChainWithoutJWT(t *testing.T) {
	t.Parallel()
	req := func(authz string) *http.Request {
		r := httptest.NewRequest(http.MethodGet, "/mcp", nil)
		if authz != "" {
			r.Header.Set("Authorization", authz)
		}
		return r
	}
	tokens := fakeTokens{"t1": "ann"}
	c, err := identity.Chain{Tokens: tokens}.Authenticate(t.Context(), req(""))
	if c != nil || err != nil {
		t.Errorf("tokens only, no token: %v %v", c, err)
	}
	if _, err := (identity.Chain{Tokens: tokens}).Authenticate(t.Context(), req("Bearer t2")); !errors.Is(err, identity.ErrInvalidToken) {
		t.Errorf("tokens only, unknown token: %v", err)
	}
	if c, err := (identity.Chain{Tokens: tokens}).Authenticate(t.Context(), req("Bearer t1")); err != nil || c.Subject != "ann" {
		t.Errorf("tokens only, known token: %v %v", c, err)
	}
	var jwt identity.Verifier = verifierFunc(nil)
	if _, err := (identity.Chain{JWT: jwt}).Authenticate(t.Context(), req("")); !errors.Is(err, identity.ErrNoToken) {
		t.Errorf("jwt, no token: %v", err)
	}
	if c, err := (identity.Chain{JWT: jwt, AllowAnonymous: true}).Authenticate(t.Context(), req("")); c != nil || err != nil {
		t.Errorf("jwt, anonymous allowed, no token: %v %v", c, err)
	}
}

func TestAnswer(t *testing.T) {
	t.Parallel()
	const meta = "https://tools.example.com/.well-known/oauth-protected-resource/mcp"
	tests := []struct {
		err       error
		status    int
		challenge string
	}{
		{identity.ErrNoToken, 401, `Bearer resource_metadata="` + meta + `"`},
		{&identity.InvalidTokenError{Reason: "x"}, 401, `Bearer error="invalid_token", resource_metadata="` + meta + `"`},
		{identity.ErrUnavailable, 503, ""},
		{errors.New("boom"), 500, ""},
	}
	for _, tt := range tests {
		status, challenge := identity.Answer(tt.err, meta)
		if status != tt.status || challenge != tt.challenge {
			t.Errorf("%v: %d %q, want %d %q", tt.err, status, challenge, tt.status, tt.challenge)
		}
	}
}

// TestProtectedResourceMetadata: the document of docs/contract.md §12 at both paths.
func TestProtectedResourceMetadata(t *testing.T) {
	t.Parallel()
	s := identity.Settings{Issuer: testIssuer, Resource: testResource, ScopesSupported: []string{"tools:read"}}.WithDefaults("")
	if got := identity.MetadataURL(s.Resource); got != "https://tools.example.com/.well-known/oauth-protected-resource/mcp" {
		t.Errorf("MetadataURL = %q", got)
	}
	paths := s.MetadataPaths()
	if !reflect.DeepEqual(paths, []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"}) {
		t.Errorf("paths = %q", paths)
	}
	mux := http.NewServeMux()
	for _, p := range paths {
		mux.Handle("GET "+p, s.MetadataHandler())
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	for _, p := range paths {
		resp, err := srv.Client().Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var doc map[string]any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatalf("%s: %v: %s", p, err, b)
		}
		want := map[string]any{
			"resource":                 testResource,
			"authorization_servers":    []any{testIssuer},
			"bearer_methods_supported": []any{"header"},
			"scopes_supported":         []any{"tools:read"},
			"resource_name":            "toolgate",
		}
		if !reflect.DeepEqual(doc, want) {
			t.Errorf("%s: %s", p, b)
		}
	}
}

func TestSettingsValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		s    identity.Settings
		want string // "" valid
	}{
		{"nothing", identity.Settings{}, ""},
		{"issuer", identity.Settings{Issuer: testIssuer, Resource: testResource}, ""},
		{"loopback http", identity.Settings{Issuer: "http://127.0.0.1:8080", Resource: "http://127.0.0.1/mcp"}, ""},
		{"http elsewhere", identity.Settings{Issuer: "http://idp.example.com", Resource: testResource}, `auth: auth.issuer: "http://idp.example.com": want https (http only on a loopback host)`},
		{"jwks without issuer", identity.Settings{JWKS: "keys.json", Resource: testResource}, "auth: auth.jwks needs auth.issuer: a token's iss is checked against it"},
		{"audience without issuer", identity.Settings{Audiences: []string{"x"}}, "auth: auth.resource, auth.audiences, auth.*_claim and auth.scopes_supported need auth.issuer"},
		{"no resource", identity.Settings{Issuer: testIssuer}, "auth: auth.resource is empty"},
		{"resource fragment", identity.Settings{Issuer: testIssuer, Resource: testResource + "#x"}, `auth: auth.resource "https://tools.example.com/mcp#x": want an absolute URI without a fragment (RFC 8707)`},
		{"bad path", identity.Settings{Issuer: testIssuer, Resource: testResource, RolesClaim: "a..b"}, `auth: auth.roles_claim "a..b": want a dotted path such as realm_access.roles`},
	}
	for _, tt := range tests {
		err := tt.s.Validate()
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
	d := identity.Settings{Issuer: testIssuer}.WithDefaults("127.0.0.1:8080")
	if d.Resource != "http://127.0.0.1:8080/mcp" || !reflect.DeepEqual(d.Audiences, []string{d.Resource}) || d.SubjectClaim != "sub" || d.RolesClaim != "roles" {
		t.Errorf("defaults: %+v", d)
	}
}

// TestClaimPaths: dotted paths, a namespaced claim name holding dots.
func TestClaimPaths(t *testing.T) {
	t.Parallel()
	payload := []byte(`{"sub":"u1","https://example.com/roles":["a","b"],"realm_access":{"roles":["r"]},"groups":"g1 g2","oid":"o-1"}`)
	for _, tt := range []struct {
		subject, roles string
		wantSub        string
		wantRoles      []string
	}{
		{"", "", "u1", nil},
		{"oid", "https://example.com/roles", "o-1", []string{"a", "b"}},
		{"sub", "realm_access.roles", "u1", []string{"r"}},
		{"sub", "groups", "u1", []string{"g1", "g2"}},
	} {
		c, err := identity.CallerFromClaims(payload, identity.Settings{SubjectClaim: tt.subject, RolesClaim: tt.roles})
		if err != nil || c.Subject != tt.wantSub || !reflect.DeepEqual(c.Roles, tt.wantRoles) {
			t.Errorf("%q %q: %+v %v", tt.subject, tt.roles, c, err)
		}
	}
}

type verifierFunc func(string) error

func (f verifierFunc) Verify(_ context.Context, token string) (*toolcall.Caller, error) {
	return nil, errors.New("not called")
}
