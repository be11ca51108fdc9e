package urlx_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/urlx"
)

func TestRedact(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want string }{
		{"https://host/mcp", "https://host/mcp"},
		{"https://host:8443/a/b", "https://host:8443/a/b"},
		{"https://host/mcp?api_key=S3CRET", "https://host/mcp?REDACTED"},
		{"https://host/mcp?", "https://host/mcp?REDACTED"},
		{"https://svc:S3CRET@host/mcp", "https://REDACTED@host/mcp"},
		{"https://S3CRET@host/mcp", "https://REDACTED@host/mcp"},
		{"https://svc:S3CRET@host/mcp?a=1&token=S3CRET#S3CRET", "https://REDACTED@host/mcp?REDACTED#REDACTED"},
		{"http://[::1]:80/mcp?token=S3CRET", "http://[::1]:80/mcp?REDACTED"},
		// Not URLs with a host: redacted whole.
		{"https://svc:S3CRET@ho st/mcp?token=S3CRET", "REDACTED"},
		{"https://host/%zz?token=S3CRET", "REDACTED"},
		{"svc:S3CRET@host/mcp", "REDACTED"},
		{"S3CRET@host/mcp", "REDACTED"},
		{"", ""},
	}
	for _, tc := range cases {
		got := urlx.Redact(tc.in)
		require.Equal(t, tc.want, got, "Redact(%q)", tc.in)
		require.NotContains(t, got, "S3CRET")
	}
}

// FuzzRedact: whatever the string, a secret in its query, fragment or
// user information never appears in Redact's answer, which parses.
func FuzzRedact(f *testing.F) {
	for _, s := range []string{"https://u:p@h/x?q#f", "http://h/?a=b", "a@b?c", "https://[::1/?x", "h://a@b@c/d"} {
		f.Add(s, "S3CRET")
	}
	f.Fuzz(func(t *testing.T, prefix, secret string) {
		// The prefix, as written or as a path escapes it, may itself hold
		// the secret's characters: that is not a leak.
		escaped := (&url.URL{Path: "/" + prefix}).EscapedPath()
		if len(secret) < 4 || strings.ContainsAny(secret, "?#@/%") || strings.Contains(prefix+urlx.Marker, secret) ||
			strings.Contains(urlx.Marker, secret) || strings.Contains(escaped, secret) {
			return
		}
		for _, u := range []string{
			fmt.Sprintf("%s?token=%s", prefix, secret),
			fmt.Sprintf("%s#%s", prefix, secret),
			fmt.Sprintf("https://%s@host/%s", secret, prefix),
			fmt.Sprintf("https://user:%s@host/?%s", secret, prefix),
		} {
			got := urlx.Redact(u)
			if strings.Contains(got, secret) {
				t.Fatalf("Redact(%q) = %q holds %q", u, got, secret)
			}
			if _, err := url.Parse(got); err != nil {
				t.Fatalf("Redact(%q) = %q, which does not parse: %v", u, got, err)
			}
		}
	})
}
