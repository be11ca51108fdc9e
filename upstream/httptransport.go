package upstream

import "net/http"

// newHTTPTransport is the HTTP transport of one HTTP upstream's sessions:
// http.DefaultTransport's settings (proxy from the environment, HTTP/2
// when a TLS upstream offers it, the same time-outs), with room to keep
// idle connections alive for idlePerHost requests at once.
// http.DefaultTransport keeps 2 idle connections per host: with more
// calls in flight than that, every call past the second opened a TCP
// connection (and a TLS handshake) and closed it after.
//
// Each caller session (relay.go) has at most one request in flight, and
// the shared session one per call made without a caller (and its
// standalone stream), so MaxCallerSessions and a few more is what the
// upstream's calls keep open; idle connections are closed after
// IdleConnTimeout (90 s) and at Pool.Close.
func newHTTPTransport(idlePerHost int) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 0 // no bound across hosts: one transport serves one upstream
	t.MaxIdleConnsPerHost = idlePerHost
	return t
}

// sharedIdleConns is the idle connections kept beyond MaxCallerSessions:
// the shared session's requests.
const sharedIdleConns = 8
