package httpserve

import "github.com/toolgate/toolgate/internal/servesettings"

// Settings are the HTTP server's settings of `toolgate serve`
// (docs/contract.md §11), declared with the other serve settings
// (servesettings.HTTP) so that the settings table need not import this
// package. Each field's zero value is its default (the Default*
// constants); the fields mean what Options' fields of the same names
// mean.
type Settings = servesettings.HTTP

// OptionsOf returns Options carrying s, for the caller to fill in the
// rest (MCPServer, the credentials, the handlers).
func OptionsOf(s Settings) Options {
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
