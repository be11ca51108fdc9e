package servesettings

import (
	"strings"
	"time"
)

// Defaults of the HTTP server's limits (docs/contract.md §11).
const (
	DefaultSessionTimeout = 10 * time.Minute
	DefaultMaxSessions    = 10000
	DefaultReadTimeout    = 30 * time.Second
	DefaultIdleTimeout    = 2 * time.Minute
	// DefaultMaxConnections is well below common open-file limits (a
	// connection is one descriptor; the process needs others).
	DefaultMaxConnections = 4096
	DefaultAdminRole      = "admin"
)

// HTTP are the HTTP server's settings of `toolgate serve`
// (docs/contract.md §11): its limits, the accepted origins, the operator
// role and the metrics address; httpserve.Options embeds it. Each field's
// zero value is its default (the Default* constants).
type HTTP struct {
	// SessionTimeout closes a session that received no request for that
	// long; zero is DefaultSessionTimeout, negative never. It overrides
	// httpserve.Options.Streamable.SessionTimeout unless zero.
	SessionTimeout time.Duration
	// MaxSessions caps the sessions alive at once: a request that would
	// open one more gets HTTP 503. Zero is DefaultMaxSessions, negative no
	// cap.
	MaxSessions int
	// ReadTimeout bounds how long a request body may take to arrive; zero
	// is DefaultReadTimeout.
	ReadTimeout time.Duration
	// IdleTimeout closes a keep-alive connection idle that long
	// (httpserve.Server.Serve); zero is DefaultIdleTimeout.
	IdleTimeout time.Duration
	// MaxConnections caps the connections open at once
	// (httpserve.Server.Serve). At the cap, the connection idle the
	// longest between keep-alive requests is closed to make room; without one, new connections wait in the
	// listen backlog until one closes (each ends in bounded time: header
	// and body deadlines, IdleTimeout, SessionTimeout for streams). Zero
	// is DefaultMaxConnections, negative no cap.
	MaxConnections int
	// AllowedOrigins are the Origin values accepted besides the listener's
	// own (scheme://host[:port], compared without letter case).
	AllowedOrigins []string
	// AdminRole is the operator role (verbose /healthz, /metrics); ""
	// is DefaultAdminRole.
	AdminRole string
	// MetricsAddr, when set, is a second address the server's
	// ListenAndServe and Serve listen on, serving httpserve.Options.Metrics
	// at /metrics to anyone (Host and Origin are checked as on the main
	// listener).
	MetricsAddr string
}

// Admin is the operator role: AdminRole, or DefaultAdminRole when that is
// "".
func (s HTTP) Admin() string {
	if s.AdminRole == "" {
		return DefaultAdminRole
	}
	return s.AdminRole
}

// BadOrigins returns, in order, the AllowedOrigins that are not an http://
// or https:// origin, so a settings check can name each; nil when all are.
func (s HTTP) BadOrigins() []string {
	var bad []string
	for _, o := range s.AllowedOrigins {
		if !strings.HasPrefix(o, "http://") && !strings.HasPrefix(o, "https://") {
			bad = append(bad, o)
		}
	}
	return bad
}
