package httpserve

import (
	"strings"
	"time"
)

// Settings are the HTTP server's settings of `toolgate serve`
// (docs/contract.md §11): its limits, the accepted origins, the operator
// role and the metrics address. Each field's zero value is its default
// (the Default* constants); the fields mean what Options' fields of the
// same names mean.
type Settings struct {
	SessionTimeout time.Duration
	MaxSessions    int
	ReadTimeout    time.Duration
	IdleTimeout    time.Duration
	MaxConnections int
	AllowedOrigins []string
	AdminRole      string
	MetricsAddr    string
}

// Options returns Options carrying s, for the caller to fill in the rest
// (MCPServer, the credentials, the handlers).
func (s Settings) Options() Options {
	return Options{
		SessionTimeout: s.SessionTimeout,
		MaxSessions:    s.MaxSessions,
		ReadTimeout:    s.ReadTimeout,
		IdleTimeout:    s.IdleTimeout,
		MaxConnections: s.MaxConnections,
		AllowedOrigins: s.AllowedOrigins,
		AdminRole:      s.AdminRole,
		MetricsAddr:    s.MetricsAddr,
	}
}

// Admin is the operator role: AdminRole, or DefaultAdminRole when that is
// "".
func (s Settings) Admin() string {
	if s.AdminRole == "" {
		return DefaultAdminRole
	}
	return s.AdminRole
}

// BadOrigins returns, in order, the AllowedOrigins that are not an http://
// or https:// origin, so a settings check can name each; nil when all are.
func (s Settings) BadOrigins() []string {
	var bad []string
	for _, o := range s.AllowedOrigins {
		if !strings.HasPrefix(o, "http://") && !strings.HasPrefix(o, "https://") {
			bad = append(bad, o)
		}
	}
	return bad
}
