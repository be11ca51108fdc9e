package gateway

import (
	"context"
	"maps"
	"net/http"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/server/authzen"
	"github.com/toolgate/toolgate/internal/server/httpserve"
	"github.com/toolgate/toolgate/mcpadapter"
)

// withAuthZEN adds the AuthZEN endpoints (docs/authzen.md) to routes when
// PDP roles are configured: answered from the engine's current revision
// by the same decisions `toolgate explain` prints (the dry run of the call
// pipeline; the prompt and resource decisions, resources resolved in the
// catalog the served resources/read resolves them in).
func (g *Gateway) withAuthZEN(routes map[string]http.Handler) map[string]http.Handler {
	if len(g.cfg.PDPRoles) == 0 {
		return routes
	}
	admin := g.cfg.HTTPServer.Admin()
	out := maps.Clone(routes)
	if out == nil {
		out = map[string]http.Handler{}
	}
	var resolve func(context.Context, string) *engine.Resource
	if cat := g.catalog(); cat != nil {
		resolve = func(ctx context.Context, uri string) *engine.Resource {
			return mcpadapter.ResolveResource(ctx, cat, uri)
		}
	}
	maps.Copy(out, authzen.Routes(authzen.Options{
		Revisions:        g.eng,
		Methods:          g.methods,
		Resolve:          resolve,
		Caller:           httpserve.RequestCaller,
		PDPRoles:         g.cfg.PDPRoles,
		AdminRole:        admin,
		ListFallbackNone: g.cfg.ListFallback == config.ListFallbackNone,
		Logger:           g.log,
	}))
	return out
}
