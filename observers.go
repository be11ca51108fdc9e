package toolgate

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/internal/frontdoor"
	"github.com/toolgate/toolgate/methods"
)

// Tracer puts a Server's requests, hooks and methods in spans (SPEC §14);
// *tracing.Tracer is one. The front door takes this interface, not the
// package, so that a program that does not trace links no OpenTelemetry
// exporter (and no gRPC). New calls it while it assembles the Server, and
// never after.
type Tracer interface {
	// RequestMiddleware returns the receiving middleware that runs each
	// request in its server span. A tools/call span names the tool only
	// when isRow says a row of the revision serving has that name: the
	// name is the client's, and span names are what tracing backends
	// index.
	RequestMiddleware(isRow func(name string) bool) mcp.Middleware
	// WrapHook returns h with each half in its span.
	WrapHook(h hooks.Hook) hooks.Hook
	// WrapMethods returns ms with each method's run in its span.
	WrapMethods(ms methods.Set) methods.Set
}

// DecisionLog records a Server's grant and call decisions (SPEC §14);
// *decisionlog.Logger is one. New adds its observer to every MCP server of
// the Server, after Options.Observers and the audit trail's.
type DecisionLog interface {
	Observer() hooks.Observer
}

// Metrics counts what a Server does besides its calls; *metrics.Metrics
// is one (count the calls with its hook in Options.Hooks). Its methods
// must return quickly; they may be called concurrently.
type Metrics interface {
	// ReloadOK is called after each swap to a new revision while the
	// Server watches its files (Options.Watch).
	ReloadOK()
	// ReloadFailed is called when changed files did not load; the
	// revision serving stays.
	ReloadFailed()
	// AuditDropped is called for each audit record the trail of
	// Options.Audit dropped (buffer full, write failed).
	AuditDropped()
}

// Names of the receiving middleware New adds between the wire layer and
// the adapter's (mcpadapter.Layers.Inner); Server.Layers lists the whole
// list, outermost first.
const (
	// LayerTracing puts each request in its span; only with
	// Options.Tracer. Its tools/call spans name a tool only when a row of
	// the revision serving has the name.
	LayerTracing = frontdoor.LayerTracing
	// LayerMiddleware is one of Options.Middleware, in their order.
	LayerMiddleware = frontdoor.LayerMiddleware
)
