package gateway

import (
	"context"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/upstream"
)

// How the gateway starts its upstreams (docs/contract.md §19, "Starting"):
// New connects them in the background and serves at once; initialize is
// answered at once too, announcing the prompts, resources and completions
// of the importing upstreams whether they are up or not (the Pool's
// Offers). The listings wait until every upstream has finished its
// handshake or failed it, each bounded by its timeout, and the revision
// has what they import: a desktop client that starts `toolgate serve
// --stdio` in front of slow npx or Python servers sees their tools in its
// first listing. One that fails is retried in the background; when it
// comes up, the revision is rebuilt and the sessions told list_changed.

// LayerStart is the receiving middleware that holds the listings until
// the upstreams have started.
const LayerStart = "upstreams-start"

// held are the requests held while the upstreams start: the listings,
// and what names a prompt or resource only an upstream serves. A
// tools/call is held only for a tool the revision does not have yet.
var held = map[string]bool{
	"tools/list": true, "prompts/list": true, "resources/list": true, "resources/templates/list": true,
	"prompts/get": true, "resources/read": true, "resources/subscribe": true, "completion/complete": true,
}

// startUpstreams connects pool's upstreams in the background; started is
// closed once each has answered or failed and the revision has their
// imports.
func (g *Gateway) startUpstreams(pool *upstream.Pool) {
	log := g.log
	g.started = make(chan struct{})
	g.engineSet = make(chan struct{})
	log.Info("toolgate: starting upstreams; listings wait until each has answered initialize or failed", slog.Any("upstreams", pool.Names()))
	g.goUntilClose(func(ctx context.Context) {
		defer close(g.started)
		err := pool.Connect(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			log.Warn("toolgate: an upstream is not reachable; its tools, prompts and resources are not listed until it is (it is retried in the background, and listings change when it comes up)",
				slog.Any("error", err))
		}
		g.importing.Store(true)
		select {
		case <-g.engineSet:
		case <-ctx.Done():
			return
		}
		log.Info("toolgate: upstreams started; building the revision with what they import")
		if _, err := g.eng.Reload(context.WithoutCancel(ctx)); err != nil {
			log.Warn("toolgate: building the revision with the upstreams' tools failed", slog.Any("error", err))
		}
	})
}

// startLayers are the front's layers that hold the listings until the
// upstreams have started; none without upstreams.
func (g *Gateway) startLayers() []mcpadapter.Layer {
	started := g.started
	if started == nil {
		return nil
	}
	return []mcpadapter.Layer{{Name: LayerStart, Middleware: func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if held[method] || method == "tools/call" && !g.hasTool(req) {
				select {
				case <-started:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			return next(ctx, method, req)
		}
	}}}
}

// hasTool reports whether the tool a tools/call names is in the revision
// serving.
func (g *Gateway) hasTool(req mcp.Request) bool {
	r, ok := req.(*mcp.CallToolRequest)
	if !ok || r.Params == nil || g.eng == nil {
		return false
	}
	return g.eng.Current().Registry().Tool(r.Params.Name) != nil
}
