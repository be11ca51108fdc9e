// Package urlx formats URLs that may carry secrets.
//
// A URL toolgate is configured with (an upstream's url, a decision-log
// sink) may hold a credential in its user information or its query
// (https://svc:PASSWORD@host/mcp, https://host/mcp?api_key=KEY). Every
// error, log line and audit record that names such a URL names it through
// Redact:
//
//	urlx.Redact("https://svc:pw@host/mcp?api_key=KEY") // https://REDACTED@host/mcp?REDACTED
package urlx

import "net/url"

// Marker stands in for what Redact removes.
const Marker = "REDACTED"

// Redact returns u without the parts that carry secrets: the whole user
// information (the name too: https://TOKEN@host is a common form), the
// query and the fragment are each replaced by Marker; the scheme, host and
// path stay, to say which endpoint it is. url.URL.Redacted hides only the
// password. A string that is not a URL with a host (it does not parse, or
// it is opaque or relative) is Marker whole. What Redact returns parses as
// a URL.
func Redact(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.Opaque != "" || p.Host == "" {
		if u == "" {
			return ""
		}
		return Marker
	}
	if p.User != nil {
		p.User = url.User(Marker)
	}
	if p.RawQuery != "" || p.ForceQuery {
		p.RawQuery, p.ForceQuery = Marker, false
	}
	if p.Fragment != "" || p.RawFragment != "" {
		p.Fragment, p.RawFragment = Marker, ""
	}
	return p.String()
}
