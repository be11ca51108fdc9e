package toolgate

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/decisionlog"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/hooks/audit"
	"github.com/toolgate/toolgate/hooks/ledger"
	"github.com/toolgate/toolgate/internal/version"
	"github.com/toolgate/toolgate/internal/wire"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/tracing"
)

// Options configure a governed MCP server (New). Only Methods is required.
type Options struct {
	// Registry is the registry file and Policies the policy directory; each
	// that is "" is the bundled example's (see Source).
	Registry, Policies string
	// Source, when set, is read instead of Registry and Policies: files of
	// an fs.FS, say.
	Source *engine.Source
	// Methods resolves the rows' methods (required): an
	// mcpadapter.Methods of Go functions, an upstream pool, or both.
	Methods mcpadapter.MethodSet
	// Caller says on whose behalf each request is made; nil: everyone is
	// nobody, who sees no tool. Over HTTP it reads the request's
	// credentials (req.GetExtra()).
	Caller mcpadapter.CallerFunc
	// Hooks run around every accepted call, in order, then the audit
	// trail's (an idempotency ledger: hooks/ledger).
	Hooks []mcpadapter.Hook
	// Audit, when set, receives the audit trail as JSON Lines; Close
	// flushes it. The writer is not closed.
	Audit io.Writer
	// Approvals holds the calls an approval rule names (hooks/approvals);
	// nil: such a call fails closed.
	Approvals mcpadapter.Approvals
	// Limits counts calls under the rate limits of data.toolgate.call.limit
	// (hooks/ledger.NewLimiter over the ledger's store, which replicas may
	// share); nil: this process counts them in memory.
	Limits mcpadapter.Limits
	// Watch reloads registry and policies when their files change, until
	// Close.
	Watch bool
	// Logger receives failures in full detail; nil discards them.
	Logger *slog.Logger
	// Implementation names the server to its clients; nil is toolgate, at
	// the version `toolgate version` prints.
	Implementation *mcp.Implementation
	// EngineOptions are further engine options (engine.WithTimeout,
	// engine.WithCapabilities, ...).
	EngineOptions []engine.Option
	// DecisionLog, when set, receives every grant and call decision as an
	// OPA decision-log event (SPEC §14, decisionlog.Logger.Observer). The
	// Server does not close it: close it after Close, once the sessions
	// ended, so that it writes what they decided.
	DecisionLog *decisionlog.Logger
	// Tracer, when set and on, makes a span of every tools/list and
	// tools/call (continuing a W3C traceparent from the HTTP request or
	// _meta), with children for the grant decision, the call rules, each
	// hook and the method (SPEC §14). The Server does not shut it down:
	// shut it down after Close.
	Tracer *tracing.Tracer
}

// Server is a governed MCP server: tools/list and tools/call of every
// transport it serves are decided by its registry and policies. A reload
// (Reload, or Options.Watch) sends notifications/tools/list_changed to
// exactly the sessions whose listing changed. It is safe for concurrent
// use; Close it when done.
type Server struct {
	eng     *engine.Engine
	adapter *mcpadapter.Adapter
	mcp     *mcp.Server
	audit   *audit.Auditor

	cancel context.CancelFunc
	stop   func()
	mu     sync.Mutex // guards closed against wg.Add after Close began
	closed bool
	wg     sync.WaitGroup

	closeOnce sync.Once
	closeErr  error
}

// New loads the registry and policies and returns a Server governed by
// them. It fails when they do not load or Options.Methods is nil. ctx
// bounds the loading and the Server's background work (watching,
// notifications); Close ends that work too.
func New(ctx context.Context, opts Options) (*Server, error) {
	if opts.Methods == nil {
		return nil, errors.New("toolgate: Options.Methods is required")
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	src := Source(opts.Registry, opts.Policies)
	if opts.Source != nil {
		src = *opts.Source
	}
	eng, err := engine.New(ctx, src, append([]engine.Option{engine.WithLogger(log)}, opts.EngineOptions...)...)
	if err != nil {
		return nil, err
	}
	s := &Server{eng: eng}
	if opts.Limits == nil {
		opts.Limits = ledger.NewLimiter(ledger.NewMemoryStore(), nil)
	}
	tr := opts.Tracer // a nil or off Tracer wraps nothing
	// Logging is announced: a Go method may log to its client through its
	// call's Peer (docs/contract.md §16).
	s.adapter = mcpadapter.New(mcpadapter.Options{Revisions: eng, Methods: tr.WrapMethods(opts.Methods), Caller: opts.Caller, Logger: log, Approvals: opts.Approvals, Limits: opts.Limits, Logging: true})
	for _, h := range opts.Hooks {
		s.adapter.AddHook(tr.WrapHook(h))
	}
	if opts.Audit != nil {
		s.audit = audit.New(opts.Audit, audit.Options{Logger: log})
		s.adapter.AddHook(tr.WrapHook(s.audit.Hook()))
	}
	if opts.DecisionLog != nil {
		s.adapter.AddObserver(opts.DecisionLog.Observer())
	}
	impl := opts.Implementation
	if impl == nil {
		impl = &mcp.Implementation{Name: "toolgate", Version: version.Get().Version}
	}
	s.mcp = s.adapter.NewServer(impl, &mcp.ServerOptions{Logger: log})
	if tr.Enabled() {
		// Added last, it runs first: every hook and observer sees the span.
		s.mcp.AddReceivingMiddleware(tr.Middleware(tracing.WireMeta))
	}

	bg, cancel := context.WithCancel(ctx)
	s.cancel = cancel
	s.stop = eng.Listen(func(old, next *engine.Revision) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.closed {
			return
		}
		s.wg.Add(1)
		go func() { defer s.wg.Done(); s.adapter.NotifyListingChanged(bg, s.mcp, old, next) }()
	})
	if opts.Watch {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			if err := eng.Watch(bg, engine.WatchOptions{}); err != nil && !errors.Is(err, engine.ErrNotWatchable) && bg.Err() == nil {
				log.Error("toolgate: watching files failed; reload is off", slog.Any("error", err))
			}
		}()
	}
	return s, nil
}

// Serve serves one client over t until the client disconnects or ctx is
// done. The transport is always wrapped in the wire layer
// (mcpadapter.WrapTransport), which gives tools/call requests the go-sdk
// cannot decode their governed answers and keeps _meta in wire order.
// When the client's input ends (stdin closed), Serve returns only once
// every request it read has been answered, or ctx is done: a client that
// writes a request and closes its end still gets the answer.
func (s *Server) Serve(ctx context.Context, t mcp.Transport) error {
	return s.mcp.Run(ctx, mcpadapter.WrapTransport(wire.AnswerBeforeEOF(t)))
}

// Handler returns the streamable HTTP handler of the Server (mount it at
// your MCP endpoint), with the wire layer and the request-body limit of
// mcpadapter.WrapHTTP. It adds no authentication: Options.Caller reads the
// request's credentials. The toolgate binary's hardened HTTP server is
// package httpserve.
func (s *Server) Handler() http.Handler {
	return mcpadapter.WrapHTTP(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, nil))
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

// MCPServer is the go-sdk server the Server governs, for an expert host
// (serve it only through mcpadapter.WrapTransport or WrapHTTP).
func (s *Server) MCPServer() *mcp.Server { return s.mcp }

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
