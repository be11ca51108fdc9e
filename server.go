package toolgate

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/internal/frontdoor"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/methods"
	"github.com/toolgate/toolgate/watch"
)

// Options configure a governed MCP server (New). Only Methods is required.
// The toolgate binary builds its server through the same assembly (the
// core New wraps): it maps its settings onto these options and adds HTTP,
// identity and upstreams.
type Options struct {
	// Registry is the registry file and Policies the policy directory; each
	// that is "" is the bundled example's (see Source).
	Registry, Policies string
	// Source, when set, is read instead of Registry and Policies: files of
	// an fs.FS, say.
	Source *engine.Source
	// Methods resolves the rows' methods (required): an
	// methods.Map of Go functions, an upstream pool, or both.
	Methods methods.Set
	// Caller says on whose behalf each request is made, and the identity
	// source that vouched for that caller (the audit trail's
	// caller_source); nil: everyone is nobody, who sees no tool. Over HTTP
	// it reads the request's credentials (req.GetExtra()).
	Caller mcpadapter.CallerFunc
	// Hooks run around every accepted call, in order, then the audit
	// trail's (an idempotency ledger: hooks/ledger; call counts:
	// metrics.Metrics.Hook).
	Hooks []hooks.Hook
	// HookTimeout bounds each hook run; zero is
	// mcpadapter.DefaultHookTimeout.
	HookTimeout time.Duration
	// Observers are told of every grant decision and of how every decided
	// call ended (hooks.Observer), in order, before the audit trail's
	// and the decision log's.
	Observers []hooks.Observer
	// Audit, when set, receives the audit trail as JSON Lines; Close
	// flushes it. The writer is not closed.
	Audit io.Writer
	// Approvals holds the calls an approval rule names (hooks/approvals);
	// nil: such a call fails closed.
	Approvals mcpadapter.Approvals
	// Limits counts calls under the rate limits of data.toolgate.call.limit
	// (hooks/ledger.NewLimiter over the ledger's store, which replicas may
	// share); nil: this process counts them in memory.
	Limits hooks.Limits
	// History keeps callers' histories for input.history
	// (docs/contract.md §20; hooks/ledger.NewHistory over the ledger's
	// store, which replicas may share); nil: this process keeps them in
	// memory.
	History hooks.History
	// ListFallback is what tools/list shows when the grant policy fails
	// (SPEC §6); the zero value lists the base decision.
	ListFallback hooks.ListFallback
	// Catalog serves the prompts, resources and completions of importing
	// upstreams (an upstream pool); nil: none.
	Catalog mcpadapter.Catalog
	// Logging reports, as each MCP server of the Server is built, whether
	// it announces the logging capability (SPEC §16); nil announces it: a
	// Go method may log to its client through its call's Peer. The binary
	// announces it when an upstream does.
	Logging func() bool
	// Watch reloads registry and policies when their files change, until
	// Close.
	Watch bool
	// WatchOptions tune watching (debounce, settle) and tell the host of
	// each reload; used with Watch.
	WatchOptions watch.Options
	// Logger receives failures in full detail; nil discards them.
	Logger *slog.Logger
	// Implementation names the server to its clients; nil is toolgate, at
	// the version `toolgate version` prints.
	Implementation *mcp.Implementation
	// EngineOptions are further engine options (engine.WithTimeout,
	// engine.WithCapabilities, ...).
	EngineOptions []engine.Option
	// DecisionLog, when set, receives every grant and call decision as an
	// OPA decision-log event (SPEC §14): a *decisionlog.Logger. The Server
	// does not close it: close it after Close, once the sessions ended, so
	// that it writes what they decided.
	DecisionLog DecisionLog
	// Tracer, when set and on, makes a span of every tools/list and
	// tools/call (continuing a W3C traceparent from the HTTP request or
	// _meta), with children for the grant decision, the call rules, each
	// hook and the method (SPEC §14): a *tracing.Tracer. A tools/call span
	// names the tool only when a row has the name. The Server does not
	// shut it down: shut it down after Close.
	Tracer Tracer
	// Metrics, when set, counts reloads and dropped audit records (a
	// *metrics.Metrics).
	Metrics Metrics
	// Middleware are further receiving middleware of the Server's MCP
	// servers, in order, inside tracing and outside the governance
	// (Server.Layers).
	Middleware []mcp.Middleware
}

// Server is a governed MCP server: tools/list and tools/call of every
// transport it serves are decided by its registry and policies. A reload
// (Reload, or Options.Watch) sends notifications/tools/list_changed to
// exactly the sessions whose listing changed. It is safe for concurrent
// use; Close it when done.
type Server struct {
	// core is the assembly and its MCP servers (internal/frontdoor), which
	// the toolgate binary uses as it is.
	core *frontdoor.Server
}

// New loads the registry and policies and returns a Server governed by
// them. It fails when they do not load or Options.Methods is nil. ctx
// bounds the loading and the Server's background work (watching,
// notifications); Close ends that work too.
//
// New is the one assembly of a governed server, in named steps: the
// engine, the hooks and observers (audit trail, decision log, tracing),
// the MCP server with its middleware, the list_changed notifications and
// the watch (internal/frontdoor.New, which the binary calls too).
func New(ctx context.Context, opts Options) (*Server, error) {
	core, err := frontdoor.New(ctx, opts.core())
	if err != nil {
		return nil, err
	}
	return &Server{core: core}, nil
}

// core maps o onto the core's options: the registry and policies resolved
// to one source, each observer interface as the core names it.
func (o Options) core() frontdoor.Options {
	src := Source(o.Registry, o.Policies)
	if o.Source != nil {
		src = *o.Source
	}
	return frontdoor.Options{
		Source:         src,
		Methods:        o.Methods,
		Caller:         o.Caller,
		Hooks:          o.Hooks,
		HookTimeout:    o.HookTimeout,
		Observers:      o.Observers,
		Audit:          o.Audit,
		Approvals:      o.Approvals,
		Limits:         o.Limits,
		History:        o.History,
		ListFallback:   o.ListFallback,
		Catalog:        o.Catalog,
		Logging:        o.Logging,
		Watch:          o.Watch,
		WatchOptions:   o.WatchOptions,
		Logger:         o.Logger,
		Implementation: o.Implementation,
		EngineOptions:  o.EngineOptions,
		Middleware:     o.Middleware,
		DecisionLog:    o.DecisionLog,
		Tracer:         o.Tracer,
		Metrics:        o.Metrics,
	}
}

// Layers names the receiving middleware of the Server's MCP servers,
// outermost first (mcpadapter.LayerWire, LayerTracing, LayerMiddleware,
// mcpadapter.LayerCatalog, mcpadapter.LayerGovernance), as added in one
// list to each (mcpadapter.Adapter.NewServerWith): every MCP server of the
// Server has them, in this order, inside the transport's own.
func (s *Server) Layers() []string { return s.core.Layers() }

// Serve serves one client over t until the client disconnects or ctx is
// done. The transport is always wrapped in the wire layer
// (mcpadapter.WrapTransport), which gives tools/call requests the go-sdk
// cannot decode their governed answers and keeps _meta in wire order.
// When the client's input ends (stdin closed), Serve returns only once
// every request it read has been answered, or ctx is done: a client that
// writes a request and closes its end still gets the answer.
func (s *Server) Serve(ctx context.Context, t mcp.Transport) error { return s.core.Serve(ctx, t) }

// Handler returns the streamable HTTP handler of the Server (mount it at
// your MCP endpoint), with the wire layer and the request-body limit of
// mcpadapter.WrapHTTP. It adds no authentication: Options.Caller reads the
// request's credentials. The toolgate binary's hardened HTTP server is
// package httpserve.
func (s *Server) Handler() http.Handler { return s.core.Handler() }

// Reload reads registry and policies again and, when they changed,
// serves the new revision and tells the sessions whose listing changed.
// A registry or policy that does not load leaves the current revision
// serving and is the error.
func (s *Server) Reload(ctx context.Context) error { return s.core.Reload(ctx) }

// Engine is the Server's engine: its current revision, status and
// decisions, for an expert host.
func (s *Server) Engine() *engine.Engine { return s.core.Engine() }

// Close stops watching and notifying and flushes the audit trail. Sessions
// being served end with their transports. Close is safe to call more than
// once.
func (s *Server) Close() error { return s.core.Close() }
