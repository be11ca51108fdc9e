package identity

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// WellKnownPrefix is the path under which Protected Resource Metadata is
// served (RFC 9728 §3).
const WellKnownPrefix = "/.well-known/oauth-protected-resource"

// MetadataPath is the path of the metadata document for resource: the
// well-known prefix followed by the resource's path (RFC 9728 §3.1), e.g.
// /.well-known/oauth-protected-resource/mcp for https://h/mcp.
func MetadataPath(resource string) string {
	u, err := url.Parse(resource)
	if err != nil || u.Path == "/" {
		return WellKnownPrefix
	}
	return WellKnownPrefix + strings.TrimSuffix(u.Path, "/")
}

// MetadataURL is the absolute URL of the metadata document for resource:
// what `resource_metadata` in WWW-Authenticate points at.
func MetadataURL(resource string) string {
	u, err := url.Parse(resource)
	if err != nil {
		return ""
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: MetadataPath(resource)}).String()
}

// Metadata is the Protected Resource Metadata (RFC 9728) of docs/contract.md §12 for s
// (after WithDefaults): resource, authorization_servers (the issuer),
// bearer_methods_supported ["header"], scopes_supported when set, and
// resource_name "toolgate".
func (s Settings) Metadata() *oauthex.ProtectedResourceMetadata {
	m := &oauthex.ProtectedResourceMetadata{
		Resource:               s.Resource,
		BearerMethodsSupported: []string{"header"},
		ScopesSupported:        s.ScopesSupported,
		ResourceName:           "toolgate",
	}
	if s.Issuer != "" {
		m.AuthorizationServers = []string{s.Issuer}
	}
	return m
}

// MetadataPaths are the paths the metadata is served at: MetadataPath and,
// when that has a suffix, the bare well-known prefix too (docs/contract.md §12).
func (s Settings) MetadataPaths() []string {
	p := MetadataPath(s.Resource)
	if p == WellKnownPrefix {
		return []string{p}
	}
	return []string{p, WellKnownPrefix}
}

// MetadataHandler serves s.Metadata() as JSON to GET (and CORS preflight):
// it is public by design (RFC 9728 §3.1), so it answers any origin. Mount it
// at each of s.MetadataPaths(), outside authentication.
func (s Settings) MetadataHandler() http.Handler {
	return auth.ProtectedResourceMetadataHandler(s.Metadata())
}
