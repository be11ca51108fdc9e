// Package frontdoor is the core of the front door (package toolgate):
// the one assembly of a governed server, in named steps (New), which
// toolgate.Server wraps for embedders and the toolgate binary uses as it
// is, for what the front door does not hand out: a further MCP server for
// a transport the binary serves itself (stdio with its --as caller, HTTP
// with its own middleware; Server.MCPServer) and a tool's listed input
// schema (Server.ListedInputSchema). Embedders serve a toolgate.Server
// through its Serve and Handler; the go-sdk server stays inside.
package frontdoor

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/hooks/audit"
	"github.com/toolgate/toolgate/hooks/ledger"
	"github.com/toolgate/toolgate/internal/sdklog"
	"github.com/toolgate/toolgate/internal/version"
	"github.com/toolgate/toolgate/internal/wire"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/methods"
	"github.com/toolgate/toolgate/store"
	"github.com/toolgate/toolgate/toolcall"
	"github.com/toolgate/toolgate/watch"
)

// Options configure the core (New): those of toolgate.Options, with the
// registry and policies resolved to one Source. Only Methods is required.
type Options struct {
	// Source is the registry and policy directory to serve.
	Source engine.Source
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

// Server is the core of a governed MCP server (toolgate.Server wraps
// one): tools/list and tools/call of every transport it serves are decided
// by its registry and policies. A reload
// (Reload, or Options.Watch) sends notifications/tools/list_changed to
// exactly the sessions whose listing changed. It is safe for concurrent
// use; Close it when done.
type Server struct {
	opts  Options
	log   *slog.Logger
	eng   *engine.Engine
	audit *audit.Auditor
	hooks []hooks.Hook
	obs   []hooks.Observer
	// inner are the Server's receiving middleware between the wire
	// layer and the adapter's (mcpadapter.Layers.Inner); layers names the
	// Server's whole list (Layers).
	inner  []mcpadapter.Layer
	layers []string

	mcpOnce sync.Once
	mcp     *mcp.Server // the MCP server of Options.Caller, built on first use

	bg     context.Context
	cancel context.CancelFunc
	stop   func()
	mu     sync.Mutex // guards servers and closed against wg.Add after Close began
	// servers are the MCP servers built (mcpServer), each with its
	// adapter: a reload tells each of their sessions.
	servers []served
	closed  bool
	wg      sync.WaitGroup

	closeOnce sync.Once
	closeErr  error
}

// served is one MCP server and the adapter that governs it.
type served struct {
	adapter *mcpadapter.Adapter
	server  *mcp.Server
}

// New loads the registry and policies and returns a Server governed by
// them. It fails when they do not load or Options.Methods is nil. ctx
// bounds the loading and the Server's background work (watching,
// notifications); Close ends that work too.
//
// New is the one assembly of a governed server, in named steps: the
// engine, the hooks and observers (audit trail, decision log, tracing),
// the MCP server with its middleware, the list_changed notifications and
// the watch.
func New(ctx context.Context, opts Options) (*Server, error) {
	if opts.Methods == nil {
		return nil, errors.New("toolgate: Options.Methods is required")
	}
	s := &Server{opts: opts, log: opts.Logger}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if err := s.buildEngine(ctx); err != nil {
		return nil, err
	}
	s.bg, s.cancel = context.WithCancel(ctx)
	s.buildPlugins()
	s.notifyListings()
	s.watch()
	return s, nil
}

// buildEngine loads the first revision.
func (s *Server) buildEngine(ctx context.Context) error {
	eng, err := engine.New(ctx, s.opts.Source, append([]engine.Option{engine.WithLogger(s.log)}, s.opts.EngineOptions...)...)
	if err != nil {
		return err
	}
	s.eng = eng
	if s.opts.Limits == nil || s.opts.History == nil {
		mem := store.NewMemoryStore()
		if s.opts.Limits == nil {
			s.opts.Limits = ledger.NewLimiter(mem, nil)
		}
		if s.opts.History == nil {
			s.opts.History = ledger.NewHistory(mem, nil)
		}
	}
	return nil
}

// buildPlugins orders the hooks, observers and receiving middleware every
// MCP server of the Server gets.
func (s *Server) buildPlugins() {
	o := &s.opts
	hooks := slices.Clone(o.Hooks)
	s.obs = slices.Clone(o.Observers)
	if o.Audit != nil {
		ao := audit.Options{Logger: s.log}
		if o.Metrics != nil {
			ao.OnDrop = o.Metrics.AuditDropped
		}
		s.audit = audit.New(o.Audit, ao)
		hooks = append(hooks, s.audit.Hook())
		s.obs = append(s.obs, s.audit.Observer()) // prompts/get, resources/read, ... (SPEC §16)
	}
	if o.DecisionLog != nil {
		s.obs = append(s.obs, o.DecisionLog.Observer())
	}
	if o.Tracer != nil {
		for i := range hooks {
			hooks[i] = o.Tracer.WrapHook(hooks[i])
		}
		o.Methods = o.Tracer.WrapMethods(o.Methods)
		// Outermost of the Server's own, so that every hook and observer
		// sees the request's span. A span names a tool only when a row of
		// the revision serving has its name: anyone may send any name.
		s.inner = append(s.inner, mcpadapter.Layer{Name: LayerTracing, Middleware: o.Tracer.RequestMiddleware(s.isRow)})
	}
	s.hooks = hooks
	for _, m := range o.Middleware {
		s.inner = append(s.inner, mcpadapter.Layer{Name: LayerMiddleware, Middleware: m})
	}
}

// MCPServer returns a further MCP server governed by the Server, whose
// callers are caller's (nil: nobody), with the transport's own receiving
// middleware outermost in its one list (mcpadapter.Layers.Transport): it
// shares the engine, hooks, observers and notifications of the Server.
// Serve and Handler serve the one of Options.Caller; the toolgate binary
// builds its stdio and HTTP servers so. Serve it only through
// mcpadapter.WrapTransport or WrapHTTP, and build it before Close.
func (s *Server) MCPServer(caller mcpadapter.CallerFunc, transport []mcpadapter.Layer) *mcp.Server {
	o := &s.opts
	a := mcpadapter.New(mcpadapter.Options{Revisions: s.eng, Methods: o.Methods, Caller: caller, Logger: s.log,
		HookTimeout: o.HookTimeout, ListFallback: o.ListFallback, Approvals: o.Approvals, Catalog: o.Catalog, Limits: o.Limits, History: o.History,
		Logging: o.Logging == nil || o.Logging()})
	for _, h := range s.hooks {
		a.AddHook(h)
	}
	for _, ob := range s.obs {
		a.AddObserver(ob)
	}
	impl := o.Implementation
	if impl == nil {
		impl = &mcp.Implementation{Name: "toolgate", Version: version.Get().Version}
	}
	srv, names := a.NewServerWith(impl, &mcp.ServerOptions{Logger: sdklog.For(s.log)}, mcpadapter.Layers{Transport: transport, Inner: s.inner})
	s.mu.Lock()
	defer s.mu.Unlock()
	s.servers = append(s.servers, served{a, srv})
	if s.layers == nil {
		s.layers = names[len(transport):]
	}
	return srv
}

// isRow reports whether a row of the revision serving is named name.
func (s *Server) isRow(name string) bool { return s.eng.Current().ToolIndex(name) >= 0 }

// Layers names the receiving middleware of the Server's MCP servers,
// outermost first (mcpadapter.LayerWire, LayerTracing, LayerMiddleware,
// mcpadapter.LayerCatalog, mcpadapter.LayerGovernance), as added in one
// list to each (mcpadapter.Adapter.NewServerWith): every MCP server of the
// Server has them, in this order, inside the transport's own.
func (s *Server) Layers() []string {
	s.mu.Lock()
	built := s.layers != nil
	s.mu.Unlock()
	if !built {
		s.mcpServerOnce() // the names are those of a server built
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.layers)
}

// notifyListings makes every new revision (Reload, the watch, or a reload
// the host makes on the engine) tell the sessions whose listing changed,
// and those whose prompts changed, on every MCP server of the Server
// (SPEC §9, §16). The notifying goroutines end before Close returns.
func (s *Server) notifyListings() {
	s.stop = s.eng.Listen(func(old, next *engine.Revision) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.closed {
			return
		}
		for _, sv := range s.servers {
			s.wg.Add(2)
			go func() { defer s.wg.Done(); sv.adapter.NotifyListingChanged(s.bg, sv.server, old, next) }()
			go func() { defer s.wg.Done(); sv.adapter.NotifyPromptsChanged(sv.server, old, next) }()
		}
	})
}

// watch reloads registry and policies on change until Close, with
// Options.Watch.
func (s *Server) watch() {
	if !s.opts.Watch {
		return
	}
	wo := s.opts.WatchOptions
	onReload, onError := wo.OnReload, wo.OnError
	m := s.opts.Metrics
	wo.OnReload = func(old, next *engine.Revision) {
		if m != nil {
			m.ReloadOK()
		}
		s.log.Info("toolgate: reloaded", slog.String("revision", next.String()))
		if onReload != nil {
			onReload(old, next)
		}
	}
	wo.OnError = func(err error) {
		if m != nil {
			m.ReloadFailed()
		}
		if onError != nil {
			onError(err)
		}
	}
	bg := s.bg
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := watch.Run(bg, s.eng, wo); err != nil && !errors.Is(err, watch.ErrNotWatchable) && bg.Err() == nil {
			s.log.Error("toolgate: watching files failed; reload is off", slog.Any("error", err))
		}
	}()
}

// Serve serves one client over t until the client disconnects or ctx is
// done (toolgate.Server.Serve). The transport is always wrapped in the wire layer
// (mcpadapter.WrapTransport), which gives tools/call requests the go-sdk
// cannot decode their governed answers and keeps _meta in wire order.
// When the client's input ends (stdin closed), Serve returns only once
// every request it read has been answered, or ctx is done: a client that
// writes a request and closes its end still gets the answer.
func (s *Server) Serve(ctx context.Context, t mcp.Transport) error {
	return s.mcpServerOnce().Run(ctx, mcpadapter.WrapTransport(wire.AnswerBeforeEOF(t)))
}

// Handler returns the streamable HTTP handler of the Server (mount it at
// your MCP endpoint), with the wire layer and the request-body limit of
// mcpadapter.WrapHTTP. It adds no authentication: Options.Caller reads the
// request's credentials. The toolgate binary's hardened HTTP server is
// package httpserve.
func (s *Server) Handler() http.Handler {
	srv := s.mcpServerOnce()
	return mcpadapter.WrapHTTP(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
}

// Reload reads registry and policies again and, when they changed,
// serves the new revision and tells the sessions whose listing changed.
// A registry or policy that does not load leaves the current revision
// serving and is the error.
func (s *Server) Reload(ctx context.Context) error {
	_, err := s.eng.Reload(ctx)
	return err
}

// Engine is the Server's engine: its current revision, status and
// decisions, for an expert host.
func (s *Server) Engine() *engine.Engine { return s.eng }

// mcpServerOnce is the MCP server of Options.Caller, which Serve and
// Handler serve, built on first use.
func (s *Server) mcpServerOnce() *mcp.Server {
	s.mcpOnce.Do(func() { s.mcp = s.MCPServer(s.opts.Caller, nil) })
	return s.mcp
}

// Close stops watching and notifying and flushes the audit trail. Sessions
// being served end with their transports. Close is safe to call more than
// once.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		s.stop()
		s.cancel()
		s.wg.Wait()
		if s.audit != nil {
			s.closeErr = s.audit.Close()
		}
	})
	return s.closeErr
}

// ListedInputSchema is the inputSchema of the tool named name as caller's
// tools/list shows it (every MCP server of s lists alike); false before
// any was built, or when caller is shown no such tool.
func (s *Server) ListedInputSchema(ctx context.Context, caller *toolcall.Caller, name string) (json.RawMessage, bool) {
	s.mu.Lock()
	if len(s.servers) == 0 {
		s.mu.Unlock()
		return nil, false
	}
	a := s.servers[0].adapter
	s.mu.Unlock()
	return a.ListedInputSchema(ctx, caller, name)
}
