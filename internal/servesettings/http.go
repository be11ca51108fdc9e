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
// role and the metrics address. Each field's zero value is its default
// (the Default* constants); the fields mean what httpserve.Options'
// fields of the same names mean.
type HTTP struct {
	SessionTimeout time.Duration
	MaxSessions    int
	ReadTimeout    time.Duration
	IdleTimeout    time.Duration
	MaxConnections int
	AllowedOrigins []string
	AdminRole      string
	MetricsAddr    string
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
