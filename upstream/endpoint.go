package upstream

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/toolgate/toolgate/internal/urlx"
)

// endpoint is an HTTP upstream's url once its ${VAR} and ${file:PATH} are
// resolved (Expand), held so that its secrets reach the wire only. The MCP
// transport is given shown, the URL as urlx.Redact writes it; the
// session's HTTP transport (credentialTransport) puts the real query and
// user information back on each request to shown. So no error of the MCP
// or HTTP client (a refused connection is logged and audited on every
// call) can quote them: it quotes shown.
type endpoint struct {
	shown   string
	display *url.URL      // shown, parsed
	real    *url.URL      // the resolved URL without user information and fragment
	user    *url.Userinfo // sent as Basic credentials; nil: none
}

// newEndpoint splits the resolved url raw. It is an error wrapping
// ErrConfig, naming raw only redacted, when raw is not an http(s) URL with
// a host.
func newEndpoint(name, raw string) (*endpoint, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: upstream %s: url %s is not an http(s) URL with a host", ErrConfig, name, redactURL(raw))
	}
	e := &endpoint{shown: urlx.Redact(raw), user: u.User}
	e.display, _ = url.Parse(e.shown) // urlx.Redact's answer parses
	r := *u
	r.User, r.Fragment, r.RawFragment = nil, "", ""
	e.real = &r
	return e, nil
}

// hides reports whether shown differs from what is sent: requests need
// restore.
func (e *endpoint) hides() bool {
	return e != nil && (e.user != nil || e.real.RawQuery != "" || e.real.ForceQuery)
}

// restore gives r, a copy of a request the MCP transport made to shown,
// the real query and the user information as Basic credentials (before
// the upstream's headers, which may set Authorization, as net/http does
// for a URL's user information). A request to another URL (a redirect
// elsewhere) is left as it is.
func (e *endpoint) restore(r *http.Request) {
	if !e.hides() || r.URL.Scheme != e.display.Scheme || r.URL.Host != e.display.Host ||
		r.URL.EscapedPath() != e.display.EscapedPath() || r.URL.RawQuery != e.display.RawQuery {
		return
	}
	u := *e.real
	r.URL = &u
	if e.user != nil {
		pw, _ := e.user.Password()
		r.SetBasicAuth(e.user.Username(), pw)
	}
}

// redactURL is how this package names an upstream's url in an error or a
// log line: urlx.Redact, without its user information and query.
func redactURL(u string) string { return urlx.Redact(u) }

// redactSettings is a --upstream value as an error may quote it: a URL
// in it (the whole value, or what follows NAME=) redacted.
func redactSettings(v string) string {
	if isHTTPURL(strings.TrimSpace(v)) {
		return redactURL(strings.TrimSpace(v))
	}
	if name, target, ok := strings.Cut(v, "="); ok && isHTTPURL(strings.TrimSpace(target)) {
		return name + "=" + redactURL(strings.TrimSpace(target))
	}
	return v
}
