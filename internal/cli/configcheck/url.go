package configcheck

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/inspect"
	"github.com/toolgate/toolgate/upstream"
)

// queryCredentialWords make a query parameter's name look like it holds a
// credential, besides credentialWords (compared case-insensitively):
// ?auth=, ?sig= (signed URLs), ?pass=, ?pwd=, ?credential=.
var queryCredentialWords = []string{"auth", "sig", "pass", "pwd", "credential"}

// checkURLCredentials warns (code credential_literal) about each upstream
// url of the config file that carries a credential written as a literal:
// user information (a password, or a name alone: https://TOKEN@host) or a
// query parameter that looks like a credential (LooksLikeCredential, or
// a name with auth, sig, pass, pwd or credential), when it is not a
// ${VAR} or ${file:PATH} reference. Its findings name the parameter,
// never a value. The url is read as text: one holding a reference need
// not parse.
func checkURLCredentials(path string, s *config.Serve, r *inspect.CheckReport) {
	for i, u := range s.Upstreams {
		if u.URL == "" {
			continue
		}
		f := inspect.Finding{Code: inspect.CodeCredentialLiteral, File: path, Field: fmt.Sprintf("upstreams[%d] (%s).url", i, u.Name)}
		rest, _, _ := strings.Cut(u.URL, "#")
		rest, query, _ := strings.Cut(rest, "?")
		if _, after, ok := strings.Cut(rest, "://"); ok {
			rest = after
		}
		authority, _, _ := strings.Cut(rest, "/")
		if k := strings.LastIndexByte(authority, '@'); k >= 0 {
			name, pw, hasPW := strings.Cut(authority[:k], ":")
			if (hasPW && pw != "" && !upstream.IsReference(pw)) || (!hasPW && name != "" && !upstream.IsReference(name)) {
				r.Warnf(f, "its user information is written in the config file: give the credential as ${VAR} or ${file:PATH} (https://user:${PASSWORD}@host/...), or as a header")
			}
		}
		for part := range strings.SplitSeq(query, "&") {
			name, value, _ := strings.Cut(part, "=")
			if n, err := url.QueryUnescape(name); err == nil {
				name = n
			}
			if value == "" || upstream.IsReference(value) || !queryNameLooksLikeCredential(name, value) {
				continue
			}
			r.Warnf(f, "its query parameter %q is written in the config file and looks like a credential: give it as ${VAR} or ${file:PATH}", name)
		}
	}
}

func queryNameLooksLikeCredential(name, value string) bool {
	if LooksLikeCredential(name, value) {
		return true
	}
	n := strings.ToLower(name)
	for _, w := range queryCredentialWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}
