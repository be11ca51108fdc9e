package identity

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// Settings configure JWT access-token verification (docs/contract.md §12). Each field
// is one setting of the table there; the yaml/json names are the config
// keys under `auth`.
type Settings struct {
	// Issuer is the authorization server (--issuer, auth.issuer). Tokens'
	// `iss` must equal it, and the Protected Resource Metadata names it.
	// Without JWKS, its metadata gives the key set's URL.
	Issuer string `yaml:"issuer" json:"issuer"`
	// JWKS is the signing keys directly (--jwks, auth.jwks): a file path or
	// an http(s) URL. A file is re-read when it changes.
	JWKS string `yaml:"jwks" json:"jwks"`
	// Resource is this server's canonical URI (--resource, auth.resource),
	// e.g. https://tools.example.com/mcp; DefaultResource gives the default.
	Resource string `yaml:"resource" json:"resource"`
	// Audiences are the accepted `aud` values (--audience, auth.audiences);
	// empty: Resource.
	Audiences []string `yaml:"audiences" json:"audiences"`
	// SubjectClaim is where the subject comes from (auth.subject_claim); a
	// dotted path; empty: "sub".
	SubjectClaim string `yaml:"subject_claim" json:"subject_claim"`
	// RolesClaim is where the roles come from (auth.roles_claim); a dotted
	// path such as realm_access.roles; empty: "roles". The claim may be an
	// array of strings or a space-separated string.
	RolesClaim string `yaml:"roles_claim" json:"roles_claim"`
	// ScopesSupported is published in the Protected Resource Metadata
	// (auth.scopes_supported).
	ScopesSupported []string `yaml:"scopes_supported" json:"scopes_supported"`
}

// Enabled reports whether JWT callers are configured: an issuer or a key set.
func (s Settings) Enabled() bool { return s.Issuer != "" || s.JWKS != "" }

// DefaultResource is the resource URI when none is set: http://<addr>/mcp,
// addr being the listen address (host:port).
func DefaultResource(addr string) string {
	return (&url.URL{Scheme: "http", Host: addr, Path: "/mcp"}).String()
}

// The claims subject and roles are read from unless Settings names others.
const (
	DefaultSubjectClaim = "sub"
	DefaultRolesClaim   = "roles"
)

// WithDefaults returns s with the defaults of docs/contract.md §12 filled in: Resource
// from the listen address, Audiences from Resource, the claim paths.
func (s Settings) WithDefaults(listenAddr string) Settings {
	if s.Resource == "" && listenAddr != "" {
		s.Resource = DefaultResource(listenAddr)
	}
	if len(s.Audiences) == 0 && s.Resource != "" {
		s.Audiences = []string{s.Resource}
	}
	if s.SubjectClaim == "" {
		s.SubjectClaim = DefaultSubjectClaim
	}
	if s.RolesClaim == "" {
		s.RolesClaim = DefaultRolesClaim
	}
	return s
}

// SettingsError lists every problem of a Settings, each naming its config key.
type SettingsError struct{ Problems []string }

func (e *SettingsError) Error() string {
	return "auth: " + strings.Join(e.Problems, "; ")
}

// Validate reports every problem of s at once (a *SettingsError), nil when
// there is none. Settings that configure nothing (no issuer, no jwks, and
// nothing else) are valid. An issuer is required whenever JWT callers are
// configured: a token's `iss` is always checked, and the metadata names it.
// URLs must be https, or http on a loopback host.
func (s Settings) Validate() error {
	var p []string
	if !s.Enabled() {
		if s.Resource != "" || len(s.Audiences) > 0 || s.SubjectClaim != "" || s.RolesClaim != "" || len(s.ScopesSupported) > 0 {
			p = append(p, "auth.resource, auth.audiences, auth.*_claim and auth.scopes_supported need auth.issuer")
		}
		return problems(p)
	}
	if s.Issuer == "" {
		p = append(p, "auth.jwks needs auth.issuer: a token's iss is checked against it")
	} else if err := checkServerURL(s.Issuer); err != nil {
		p = append(p, "auth.issuer: "+err.Error())
	}
	if isURL(s.JWKS) {
		if err := checkServerURL(s.JWKS); err != nil {
			p = append(p, "auth.jwks: "+err.Error())
		}
	}
	if s.Resource == "" {
		p = append(p, "auth.resource is empty")
	} else if u, err := url.Parse(s.Resource); err != nil || !u.IsAbs() || u.Host == "" || u.Fragment != "" {
		p = append(p, fmt.Sprintf("auth.resource %q: want an absolute URI without a fragment (RFC 8707)", s.Resource))
	}
	for _, a := range s.Audiences {
		if a == "" {
			p = append(p, "auth.audiences: an empty audience")
		}
	}
	for name, path := range map[string]string{"auth.subject_claim": s.SubjectClaim, "auth.roles_claim": s.RolesClaim} {
		if strings.HasPrefix(path, ".") || strings.HasSuffix(path, ".") || strings.Contains(path, "..") {
			p = append(p, fmt.Sprintf("%s %q: want a dotted path such as realm_access.roles", name, path))
		}
	}
	return problems(p)
}

func problems(p []string) error {
	if len(p) == 0 {
		return nil
	}
	return &SettingsError{Problems: p}
}

func isURL(s string) bool {
	return strings.HasPrefix(s, "https://") || strings.HasPrefix(s, "http://")
}

// checkServerURL accepts an https URL, or http on a loopback host (tests,
// development), as OAuth 2.1 asks of authorization servers.
func checkServerURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || !u.IsAbs() || u.Host == "" {
		return fmt.Errorf("%q is not an absolute URL", s)
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		host := u.Hostname()
		if ip := net.ParseIP(host); host == "localhost" || ip != nil && ip.IsLoopback() {
			return nil
		}
		return fmt.Errorf("%q: want https (http only on a loopback host)", s)
	default:
		return fmt.Errorf("%q: want an https URL", s)
	}
}
