package httpserve

import (
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// guard refuses, with HTTP 403, a request that arrived on a loopback
// address with a Host that is not a loopback name (DNS rebinding: a page of
// evil.example whose name now resolves to 127.0.0.1), and a request whose
// Origin is neither the listener's own nor allowed. It reports whether the
// request may go on. It applies to every path.
func (s *Server) guard(w http.ResponseWriter, r *http.Request) bool {
	local := localNetAddr(r)
	if local != nil && loopbackAddr(local) && !IsLoopback(r.Host) {
		s.log.Info("http: refused a non-loopback Host on a loopback listener", slog.String("remote", r.RemoteAddr))
		http.Error(w, "Forbidden: invalid Host header", http.StatusForbidden)
		return false
	}
	if origins := r.Header.Values("Origin"); len(origins) > 0 {
		if len(origins) > 1 || !s.originAllowed(origins[0], addrString(local)) {
			s.log.Info("http: refused a request from another origin", slog.String("remote", r.RemoteAddr))
			http.Error(w, "Forbidden: origin not allowed", http.StatusForbidden)
			return false
		}
	}
	return true
}

// originAllowed reports whether origin is one of Options.AllowedOrigins or
// the listener's own: http or https with the host and port the connection
// arrived at, or, on a loopback listener, a loopback name with its port.
func (s *Server) originAllowed(origin, local string) bool {
	origin = strings.TrimSuffix(origin, "/")
	for _, o := range s.opts.AllowedOrigins {
		if strings.EqualFold(strings.TrimSuffix(o, "/"), origin) {
			return true
		}
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.User != nil {
		return false
	}
	if local == "" {
		return false
	}
	if strings.EqualFold(u.Host, local) {
		return true
	}
	_, lport, err1 := net.SplitHostPort(local)
	_, oport, err2 := net.SplitHostPort(u.Host)
	return err1 == nil && err2 == nil && lport == oport && IsLoopback(local) && IsLoopback(u.Host)
}

// localNetAddr is the address the request's connection arrived at, nil
// when unknown.
func localNetAddr(r *http.Request) net.Addr {
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && a != nil {
		return a
	}
	return nil
}

// addrString is a's host:port, "" for nil.
func addrString(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}

// loopbackAddr is IsLoopback(a.String()) without making the string (a
// request's every time) for a TCP address.
func loopbackAddr(a net.Addr) bool {
	if t, ok := a.(*net.TCPAddr); ok {
		ip, ok := netip.AddrFromSlice(t.IP)
		return ok && ip.Unmap().IsLoopback()
	}
	return IsLoopback(a.String())
}

// IsLoopback reports whether addr (host or host:port) names a loopback
// host: localhost or a loopback IP.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = strings.Trim(addr, "[]")
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}
