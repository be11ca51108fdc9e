package gateway

import (
	"maps"
	"net/http"

	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/server/authzen"
	"github.com/toolgate/toolgate/internal/server/httpserve"
)

// withAuthZEN adds the AuthZEN endpoints (docs/authzen.md) to routes when
// PDP roles are configured: answered from the engine's current revision
// by the same dry run of the call pipeline `toolgate explain` prints.
func (g *Gateway) withAuthZEN(routes map[string]http.Handler) map[string]http.Handler {
	if len(g.cfg.PDPRoles) == 0 {
		return routes
	}
	admin := g.cfg.AdminRole
	if admin == "" {
		admin = httpserve.DefaultAdminRole
	}
	out := maps.Clone(routes)
	if out == nil {
		out = map[string]http.Handler{}
	}
	maps.Copy(out, authzen.Routes(authzen.Options{
		Revisions:        g.eng,
		Methods:          g.methods,
		Caller:           httpserve.RequestCaller,
		PDPRoles:         g.cfg.PDPRoles,
		AdminRole:        admin,
		ListFallbackNone: g.cfg.ListFallback == config.ListFallbackNone,
		Logger:           g.log,
	}))
	return out
}
