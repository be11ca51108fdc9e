// Package gateway runs a governed MCP server from settings: it maps them
// onto the front door's assembly (internal/frontdoor.New, which
// toolgate.New wraps: engine, hooks, observers, tracing, notifications,
// watch) with the binary's methods (the demo
// methods and upstream MCP servers) and shipped hooks (idempotency ledger,
// audit trail, metrics), and adds the callers (stdio flags, tokens file,
// OAuth issuer) and a transport (stdio or streamable HTTP). It is what
// `toolgate serve` runs; an embedding host can run it too.
//
// New builds everything in named steps and fails on settings that cannot
// be served; Run serves; Close releases. Config.Routes adds HTTP routes
// beside /mcp.
//
//	cfg := gateway.Config{Serve: config.Serve{HTTP: "127.0.0.1:8787"}, Stdout: os.Stdout, Stderr: os.Stderr}
//	_ = cfg.SetDefaults()
//	g, err := gateway.New(ctx, cfg)
//	if err != nil { ... }
//	defer g.Close()
//	err = g.Run(ctx)
package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/example/demo"
	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/hooks/audit"
	"github.com/toolgate/toolgate/hooks/ledger"
	"github.com/toolgate/toolgate/identity"
	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/frontdoor"
	"github.com/toolgate/toolgate/internal/inspect"
	"github.com/toolgate/toolgate/internal/runtime/bundle"
	"github.com/toolgate/toolgate/internal/server/approvals"
	"github.com/toolgate/toolgate/internal/server/console"
	"github.com/toolgate/toolgate/internal/server/httpserve"
	"github.com/toolgate/toolgate/internal/server/shadow"
	"github.com/toolgate/toolgate/internal/version"
	"github.com/toolgate/toolgate/internal/wire"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/methods"
	"github.com/toolgate/toolgate/metrics"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/store"
	"github.com/toolgate/toolgate/toolcall"
	"github.com/toolgate/toolgate/upstream"
	"github.com/toolgate/toolgate/watch"
)

// Version is reported to MCP clients as the server's version (serverInfo),
// to the decision log and to traces: the binary's, as `toolgate version`
// prints it ("dev" in a build without a module version).
var Version = version.Get().Version

// Config is everything Run needs: the settings of `toolgate serve`
// (config.Serve, docs/contract.md §8; call its SetDefaults first) and the process's
// streams.
type Config struct {
	config.Serve

	Stdin  io.ReadCloser
	Stdout io.WriteCloser
	Stderr io.Writer
	// Logger receives logs; nil logs text to Stderr.
	Logger *slog.Logger
	// Ready, when set, is called once the server accepts connections, with
	// the HTTP address (nil when serving stdio only).
	Ready func(net.Addr)
	// ExtraMethods are Go tool methods served besides BuiltinMethods; one
	// of the same name wins.
	ExtraMethods methods.Map
	// IdentityOptions configure the JWT verifier when Auth is enabled
	// (an HTTP client trusting the organisation's CA, say); the logger is
	// the gateway's unless one is given.
	IdentityOptions []identity.Option
	// Routes, when set, adds HTTP routes beside /mcp (a console, decision
	// logs): it is called once, by New, with the gateway assembled up to
	// its HTTP server, and returns handlers by http.ServeMux pattern.
	// They are served like /approvals (httpserve.Options.Routes): behind
	// the Host/Origin guard, with the caller of the request's credentials
	// at httpserve.RequestCaller.
	Routes func(*Gateway) map[string]http.Handler
}

// BuiltinMethods returns the Go tool methods compiled into the binary, the
// demo methods of docs/contract.md §8: what rows served by `toolgate serve` dispatch
// to, and what `toolgate check` checks rows against.
func BuiltinMethods() methods.Set { return demo.Methods() }

// Bundled reports whether the configuration serves the bundled example:
// no registry, no policy directory and no bundle (a bundle names neither,
// and is the operator's policy, not the example).
func (c *Config) Bundled() bool { return c.Registry == "" && c.Policy == "" && !c.Bundle.Enabled() }

// demoTokenAllowed reports whether the bundled example's public demo
// token may be offered: only when the server serves nothing but the bundled
// example (no upstreams, no host methods) on a loopback address, so the
// token, printed in every README, reaches nothing from the network.
func (c *Config) demoTokenAllowed() bool {
	return c.Bundled() && len(c.Upstreams) == 0 && len(c.ExtraMethods) == 0 && httpserve.IsLoopback(c.HTTP)
}

// demoTokenWithheld says why the demo token is not offered, for the start-up
// message; "" when it would not have been anyway (not the bundled example).
func demoTokenWithheld(c Config) string {
	switch {
	case !c.Bundled():
		return ""
	case len(c.Upstreams) > 0 || len(c.ExtraMethods) > 0:
		return " (the demo token is offered only when the bundled example is served alone, without upstreams or host methods)"
	case !httpserve.IsLoopback(c.HTTP):
		return " (the demo token is offered only on a loopback address)"
	}
	return ""
}

// Source returns the engine source the configuration names.
func (c *Config) Source() engine.Source { return toolgate.Source(c.Registry, c.Policy) }

// Gateway is a governed MCP server assembled from a Config: built by New
// in named steps (methods, engine, hooks, transports, identity), served by
// Run, released by Close. It is the shape of OPA's runtime.NewRuntime and
// Serve: everything that can fail on bad settings fails in New, before
// anything is served.
type Gateway struct {
	cfg Config
	log *slog.Logger
	m   *metrics.Metrics
	// ctx lives until Close (or until New's ctx is done): the background
	// work started by New (upstream connections, pruners, notifications)
	// runs under it.
	ctx    context.Context
	cancel context.CancelFunc

	methods methods.Set
	pool    *upstream.Pool
	// started is closed once every upstream has finished its handshake or
	// failed it (each bounded by its timeout) and the revision has what
	// they import: the listings wait for it (upstreams.go). nil without
	// upstreams.
	started chan struct{}
	// importing is set once the upstreams have started: revisions are
	// built with their imports from then on.
	importing atomic.Bool
	// engineSet is closed once the engine exists (buildEngine).
	engineSet chan struct{}
	engOpts   []engine.Option
	engRef    atomic.Pointer[engine.Engine]
	// core is the governed server (frontdoor.New, the front door's
	// assembly): the engine, hooks, observers, tracing, notifications and
	// the watch; eng is its engine.
	core    *frontdoor.Server
	eng     *engine.Engine
	bundles *bundle.Client // nil without a bundle (internal/server/gateway/bundle.go)

	ledger   *ledger.Ledger
	gate     *approvals.Gate
	limits   *ledger.Limiter
	history  *ledger.History
	audit    *audit.Auditor
	activity *console.Activity
	obs      *observe       // tracing and decision logs (internal/server/gateway/observe.go)
	shadow   *shadow.Shadow // nil without a candidate (internal/server/gateway/shadow.go)

	stdio *mcp.Server

	// The HTTP transport: the listener (open from New on, so Addr is
	// known), its callers and its server.
	ln        net.Listener
	jwt       *identity.JWT
	tokens    tokenSource // nil: none (internal/server/gateway/tokens.go)
	demoToken string
	http      *httpserve.Server

	// stopping is closed once Run stops serving (or at Close): long-lived
	// responses (the console's live tail) end with it, so that shutdown
	// need not wait for them.
	stopping     chan struct{}
	stoppingOnce sync.Once

	closers   []func() error
	closeOnce sync.Once
	closeErr  error
}

// markStopping closes stopping, once.
func (g *Gateway) markStopping() { g.stoppingOnce.Do(func() { close(g.stopping) }) }

// New assembles the gateway cfg describes (cfg.Serve with its defaults
// set): it loads registry and policies, opens the ledger and the audit
// trail, starts connecting upstreams and listens at cfg.HTTP, but serves
// nothing until Run. On error everything already built is released. ctx
// bounds the gateway's background work as well as New itself; Close ends
// it too.
func New(ctx context.Context, cfg Config) (_ *Gateway, err error) {
	if cfg.Stderr == nil {
		cfg.Stderr = io.Discard
	}
	g := &Gateway{cfg: cfg, log: cfg.Logger, m: metrics.New(), stopping: make(chan struct{})}
	if g.log == nil {
		g.log = slog.New(slog.NewTextHandler(cfg.Stderr, nil))
	}
	g.ctx, g.cancel = context.WithCancel(ctx)
	defer func() {
		if err != nil {
			_ = g.Close()
		}
	}()
	for _, step := range []func() error{
		g.buildObserve,  // tracing and decision logs, first so that Close flushes them last
		g.buildMethods,  // the Go methods, then the upstream MCP servers
		g.buildHooks,    // ledger, approvals, audit trail, metrics
		g.buildShadow,   // the candidate policy every decision is compared with
		g.buildEngine,   // the governed server (frontdoor.New): registry and policies, hooks, observers, notifications, watch
		g.buildStdio,    // the stdio transport and its static caller
		g.buildIdentity, // the HTTP listener and its callers: tokens file, JWT, demo token
		g.buildHTTP,     // the HTTP transport and its routes
	} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// Run is New, Run and Close: it serves cfg until ctx is done (HTTP: then
// shuts down gracefully, letting calls in flight finish) or, for stdio,
// until the client closes stdin.
func Run(ctx context.Context, cfg Config) (err error) {
	g, err := New(ctx, cfg)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := g.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	return g.Run(ctx)
}

// Engine is the gateway's engine: its revisions, reload and status.
func (g *Gateway) Engine() *engine.Engine { return g.eng }

// Server is the governed server the gateway serves (built by the front
// door's assembly, frontdoor.New): its engine, hooks, observers and layers.
func (g *Gateway) Server() *frontdoor.Server { return g.core }

// Metrics is the gateway's Prometheus metrics.
func (g *Gateway) Metrics() *metrics.Metrics { return g.m }

// Logger is the gateway's logger.
func (g *Gateway) Logger() *slog.Logger { return g.log }

// Addr is the HTTP address listened at; nil when serving stdio only.
func (g *Gateway) Addr() net.Addr {
	if g.ln == nil {
		return nil
	}
	return g.ln.Addr()
}

// Close releases what New built, in reverse order: it stops the
// background work and closes the upstreams, the audit trail and the
// ledger. It is safe to call more than once; the first call's error is
// returned each time.
func (g *Gateway) Close() error {
	g.closeOnce.Do(func() {
		g.markStopping()
		g.cancel()
		if g.ln != nil && g.http == nil {
			_ = g.ln.Close() // New failed before the HTTP server owned it
		}
		for i := len(g.closers) - 1; i >= 0; i-- {
			if err := g.closers[i](); err != nil && g.closeErr == nil {
				g.closeErr = err
			}
		}
	})
	return g.closeErr
}

// onClose registers f to run at Close, after everything registered later.
func (g *Gateway) onClose(f func() error) { g.closers = append(g.closers, f) }

// goUntilClose runs f in the background with a context Close cancels, and
// makes Close wait for it.
func (g *Gateway) goUntilClose(f func(ctx context.Context)) {
	ctx, stop := context.WithCancel(g.ctx)
	done := make(chan struct{})
	go func() { defer close(done); f(ctx) }()
	g.onClose(func() error { stop(); <-done; return nil })
}

// buildMethods collects the methods rows dispatch to: the demo methods and
// the host's, then the upstream MCP servers (connected in the background).
func (g *Gateway) buildMethods() error {
	cfg := &g.cfg
	g.methods = BuiltinMethods()
	if len(cfg.ExtraMethods) > 0 {
		g.methods = upstream.Chain(cfg.ExtraMethods, g.methods) // the host's win
	}
	g.engOpts = append(g.engOpts, engine.WithLogger(g.log), engine.WithTimeout(cfg.EvalTimeout))
	if cfg.Capabilities != "" {
		caps, err := engine.LoadCapabilities(cfg.Capabilities)
		if err != nil {
			return err
		}
		g.engOpts = append(g.engOpts, engine.WithCapabilities(caps))
	}
	if len(cfg.Upstreams) == 0 {
		return nil
	}
	return g.buildUpstreams()
}

// buildUpstreams starts the upstream pool and, for importing upstreams,
// makes their tools rows of every revision.
func (g *Gateway) buildUpstreams() error {
	cfg, log := &g.cfg, g.log
	// An upstream whose tool list changed may change the imported rows:
	// rebuild the revision (the engine is set before any upstream connects).
	// While the upstreams start, their outcome is one rebuild (startUpstreams).
	toolsChanged := func(string) {
		if !g.importing.Load() {
			return
		}
		if e := g.engRef.Load(); e != nil {
			if _, err := e.Reload(context.WithoutCancel(g.ctx)); err != nil {
				log.Warn("toolgate: reload after an upstream's tools changed failed", slog.Any("error", err))
			}
		}
	}
	pinsPath, err := pinsFile(&cfg.Serve)
	if err != nil {
		return err
	}
	pool, err := upstream.NewPool(config.PoolConfigs(cfg.Upstreams), &upstream.Options{Logger: log, Stderr: cfg.Stderr, ToolsChanged: toolsChanged,
		Pins: pinsPath, OnDrift: func(server, _ string) { g.m.UpstreamDrift(server) }})
	if err != nil {
		return err
	}
	g.pool = pool
	g.onClose(pool.Close)
	if pinsPath != "" && cfg.WatchOn() {
		// Pins accepted while serving (toolgate pins accept) rebuild the revision.
		g.goUntilClose(func(ctx context.Context) { watchPins(ctx, log, pinsPath, func() { toolsChanged("") }) })
	}
	g.startUpstreams(pool)
	g.methods = upstream.Chain(g.methods, pool)
	for _, u := range cfg.Upstreams {
		if u.Import {
			g.engOpts = append(g.engOpts, engine.WithRegistryHook(func(ctx context.Context, reg *registry.Registry) (*registry.Registry, error) {
				if !g.importing.Load() {
					return reg, nil // the upstreams are starting: their imports come with the revision their start builds
				}
				ctx = upstream.UpOnly(ctx)    // one that is down comes with ToolsChanged when it is up
				rows, err := pool.Import(ctx) // fails for a pins file it cannot read (docs/contract.md §15)
				if err != nil {
					return nil, err
				}
				// Prompts are governed by the same decision (docs/contract.md §16).
				return upstream.MergeImports(reg, rows, pool.ImportedPrompts(ctx))
			}))
			break
		}
	}
	return nil
}

// buildEngine builds the governed server through the front door's
// assembly (frontdoor.New, which toolgate.New wraps), with the settings
// mapped onto its Options: it loads the first revision (from the files, or from the OPA bundle, which
// it then keeps current: internal/server/gateway/bundle.go), and reports the rows that
// will not work with the methods at hand. A new revision, from a file
// reload or from an upstream whose tools changed (with or without
// --watch), tells the sessions whose listing changed (docs/contract.md
// §9, §15).
func (g *Gateway) buildEngine() error {
	src, bundles, err := g.openSource()
	if err != nil {
		return err
	}
	core, err := frontdoor.New(g.ctx, g.coreOptions(src))
	if err != nil {
		return err
	}
	g.onClose(core.Close) // before the hooks' stores and the upstreams close
	g.core, g.eng, g.bundles = core, core.Engine(), bundles
	g.engRef.Store(g.eng)
	if g.engineSet != nil {
		close(g.engineSet)
	}
	runBundle(g, bundles, g.eng)
	rev := g.eng.Current()
	g.log.Info("toolgate: loaded", slog.String("revision", rev.String()), slog.Int("tools", len(rev.Registry().Tools)))
	warnMismatches(g.log, rev.Registry(), g.methods)
	noteClosedImports(g.log, rev.Registry(), g.cfg.Upstreams)
	return nil
}

// coreOptions maps the settings onto the front door's Options.
func (g *Gateway) coreOptions(src engine.Source) frontdoor.Options {
	cfg := &g.cfg
	o := frontdoor.Options{
		Source:  src,
		Methods: g.methods,
		Hooks:   []hooks.Hook{g.ledger.Hook(), g.audit.Hook(), g.m.Hook(), g.activity.Hook()},
		// prompts/get, resources/read, ... (docs/contract.md §16)
		Observers:    []hooks.Observer{g.audit.Observer()},
		HookTimeout:  cfg.HookTimeout,
		ListFallback: listFallback(cfg.ListFallback),
		Approvals:    g.gate,
		Limits:       g.limits,
		History:      g.history,
		Catalog:      g.catalog(),
		// Logging is announced when an upstream offers it (docs/contract.md
		// §16): its messages are relayed to the calling client.
		Logging: func() bool { return g.pool != nil && g.pool.OffersLogging() },
		Watch:   cfg.WatchOn(),
		WatchOptions: watch.Options{OnReload: func(_, next *engine.Revision) {
			warnMismatches(g.log, next.Registry(), g.methods)
		}},
		Metrics:        g.m,
		Logger:         g.log,
		Implementation: &mcp.Implementation{Name: "toolgate", Version: Version},
		EngineOptions:  g.engOpts,
		Tracer:         g.obs.tr,
	}
	if g.shadow != nil {
		o.Observers = append(o.Observers, g.shadow.Observer())
	}
	if g.obs.dl != nil {
		o.DecisionLog = g.obs.dl
	}
	return o
}

// buildHooks opens the idempotency ledger (with its pruner), the approval
// gate over the same store and the audit trail.
func (g *Gateway) buildHooks() error {
	cfg, log, m := &g.cfg, g.log, g.m
	st, err := openLedger(g.ctx, &cfg.Serve)
	if err != nil {
		return err
	}
	g.onClose(st.Close)
	g.ledger = ledger.New(st, ledger.Options{Logger: log, OnReplay: m.LedgerReplay, OnConflict: m.LedgerConflict, Retention: cfg.LedgerRetention, MetaKey: cfg.IdempotencyKey})
	g.goUntilClose(func(ctx context.Context) { g.ledger.RunPruner(ctx, 0) })
	if g.gate, err = g.openApprovals(st); err != nil {
		return err
	}
	// Rate limits count in the same store, so replicas share them
	// (docs/contract.md §18); the ledger's pruner removes expired counts.
	ls, ok := st.(store.LimitStore)
	if !ok {
		return fmt.Errorf("ledger: the store %T counts no rate limits", st)
	}
	g.limits = ledger.NewLimiter(ls, nil)
	// Callers' histories too (docs/contract.md §20).
	hs, ok := st.(store.HistoryStore)
	if !ok {
		return fmt.Errorf("ledger: the store %T keeps no histories", st)
	}
	g.history = ledger.NewHistory(hs, nil)
	auditW, closeAudit, err := openAudit(cfg.Audit, cfg.Stderr)
	if err != nil {
		return err
	}
	g.audit = audit.New(auditW, audit.Options{Logger: log, OnDrop: m.AuditDropped})
	g.onClose(closeAudit)
	g.onClose(g.audit.Close)
	g.activity = console.NewActivity(0) // the console's live tail (internal/server/gateway/console.go)
	return nil
}

// buildStdio builds the stdio transport's server, whose caller is --as and
// --role.
func (g *Gateway) buildStdio() error {
	if !g.cfg.Stdio {
		return nil
	}
	g.stdio = g.core.MCPServer(mcpadapter.StaticCaller(identity.Static(g.cfg.As, g.cfg.Roles)), g.startLayers())
	return nil
}

// buildIdentity listens at the HTTP address (the default resource URI,
// docs/contract.md §12, is the address listened at, which --http 127.0.0.1:0 leaves to
// the system) and sets up the HTTP callers: the tokens file, the JWT
// issuer, or the bundled example's demo token.
func (g *Gateway) buildIdentity() error {
	cfg := &g.cfg
	if cfg.HTTP == "" {
		return nil
	}
	ln, err := net.Listen("tcp", cfg.HTTP)
	if err != nil {
		return fmt.Errorf("httpserve: %w", err)
	}
	g.ln = ln
	if g.jwt, err = newJWT(g.ctx, *cfg, ln.Addr().String(), g.log); err != nil {
		return err
	}
	switch {
	case cfg.Tokens != "":
		f, err := identity.OpenTokensFile(cfg.Tokens)
		if err != nil {
			return err
		}
		g.tokens = f
		if cfg.WatchOn() {
			g.goUntilClose(func(ctx context.Context) { watchTokens(ctx, g.log, f) })
		}
	case g.jwt != nil:
		// An operator who configured an issuer wants its callers: no
		// public demo token beside them.
	case cfg.demoTokenAllowed():
		g.demoToken, g.tokens = identity.DemoToken()
	default:
		g.log.Warn("toolgate: no --tokens: every HTTP caller is nobody and sees no tool" + demoTokenWithheld(*cfg))
	}
	return nil
}

// buildHTTP builds the HTTP transport: /mcp, /healthz, /metrics,
// /approvals, the OAuth metadata and Config.Routes.
func (g *Gateway) buildHTTP() error {
	cfg := &g.cfg
	if g.ln == nil {
		return nil
	}
	var routes map[string]http.Handler
	if cfg.Routes != nil {
		routes = cfg.Routes(g)
	}
	routes = g.withAuthZEN(routes)
	opts := httpserve.Options{Settings: cfg.HTTPServer}
	// The HTTP transport's middleware go first in the server's one list.
	opts.MCPServer = func(transport []mcpadapter.Layer) *mcp.Server {
		return g.core.MCPServer(httpserve.CallerFromRequest, append(transport, g.startLayers()...))
	}
	// A 2026-07-28 tools/call's Mcp-Param headers are checked against the
	// tool as its caller sees it listed, as the server behind checks them.
	// A tool the revision does not have yet waits, like its call, for the
	// upstreams' start.
	opts.ToolSchema = func(ctx context.Context, c *toolcall.Caller, name string) (json.RawMessage, bool) {
		if s, ok := g.core.ListedInputSchema(ctx, c, name); ok || g.started == nil {
			return s, ok
		}
		select {
		case <-g.started:
		case <-ctx.Done():
			return nil, false
		}
		return g.core.ListedInputSchema(ctx, c, name)
	}
	if g.tokens != nil {
		opts.Tokens = g.tokens
	}
	opts.JWT = g.jwt
	opts.AllowAnonymous = cfg.AllowAnonymous
	opts.Health = func() any { h := health(g.eng, g.bundles); h.Shadow = g.Shadow(); return h }
	opts.Metrics = g.m.Handler()
	opts.Logger = g.log
	opts.OnStream = g.m.Stream
	opts.Approvals = g.gate.Handler(httpserve.RequestCaller)
	// The console's streams count against the server's stream caps
	// (g.http is set when they are served).
	var hist hooks.History // callers' histories, for the console's view of one
	if g.history != nil {
		hist = g.history
	}
	opts.Console = newConsole(*cfg, g.eng, g.gate, g.activity, g.jwt, g.stopping, func(r *http.Request) (func(), error) { return g.http.OpenStream(r) }, g.catalog(), g.Shadow, hist)
	opts.Routes = routes
	g.http = httpserve.New(opts)
	return nil
}

// Run serves the transports until ctx is done (HTTP: then shuts down
// gracefully, letting calls in flight finish) or, for stdio, until the
// client closes stdin; with watching on, registry and policies reload on
// change from New until Close. It returns the first transport's error. Call Run once,
// then Close.
func (g *Gateway) Run(ctx context.Context) error {
	cfg := &g.cfg
	if g.stdio == nil && g.http == nil {
		return errors.New("gateway: nothing to serve: give Stdio or an HTTP address")
	}
	runCtx, stopAll := context.WithCancel(ctx)
	// runCtx always ends (stopAll below), and with it the long-lived
	// responses.
	context.AfterFunc(runCtx, g.markStopping)
	defer stopAll()
	errc := make(chan error, 2)
	if g.stdio != nil {
		in, out := cfg.Stdin, cfg.Stdout
		if in == nil {
			in = os.Stdin
		}
		if out == nil {
			out = os.Stdout
		}
		if g.http == nil && cfg.Ready != nil {
			cfg.Ready(nil)
		}
		go func() {
			err := g.stdio.Run(runCtx, mcpadapter.WrapTransport(wire.AnswerBeforeEOF(&mcp.IOTransport{Reader: in, Writer: out})))
			if err != nil && (runCtx.Err() != nil || errors.Is(err, io.EOF)) {
				err = nil
			}
			errc <- err // the client closed stdin: stop serving
		}()
	}
	if g.http != nil {
		welcome := cfg.Stdout
		if g.stdio != nil {
			welcome = nil // stdout is the MCP stream
		}
		go func() {
			errc <- g.http.Serve(runCtx, g.ln, func(a net.Addr) {
				if welcome != nil {
					printWelcome(welcome, a, g.demoToken, g.tokens, g.jwt, cfg.AllowAnonymous, demoTokenWithheld(*cfg))
				} else {
					g.log.Info("toolgate: serving MCP (streamable HTTP)", slog.String("url", "http://"+a.String()+"/mcp"))
				}
				if cfg.Ready != nil {
					cfg.Ready(a)
				}
			})
		}()
	}
	err := <-errc
	stopAll()
	if g.stdio != nil && g.http != nil {
		if err2 := <-errc; err == nil {
			err = err2
		}
	}
	return err
}

// listFallback maps the validated setting to the adapter's option.
func listFallback(s string) hooks.ListFallback {
	if s == config.ListFallbackNone {
		return hooks.ListFallbackNone
	}
	return hooks.ListFallbackBase
}

func printWelcome(w io.Writer, a net.Addr, demoToken string, tokens tokenSource, jwt *identity.JWT, anonymous bool, withheld string) {
	fmt.Fprintf(w, "toolgate: serving MCP (streamable HTTP) at http://%s/mcp\n", a)
	switch {
	case demoToken != "":
		fmt.Fprintf(w, "toolgate: the bundled example; connect with the demo token (subject demo, roles [admin]):\n")
		fmt.Fprintf(w, "  Authorization: Bearer %s\n", demoToken)
		fmt.Fprintf(w, "toolgate: without a token a client is nobody and sees no tool.\n")
	case tokens == nil && jwt == nil:
		fmt.Fprintf(w, "toolgate: no --tokens: every HTTP caller is nobody and sees no tool%s.\n", withheld)
	case tokens != nil:
		fmt.Fprintln(w, tokensLoaded(tokens.Len()))
	}
	if jwt != nil {
		s := jwt.Settings()
		fmt.Fprintf(w, "toolgate: accepting access tokens of %s for %s (metadata: %s)\n", s.Issuer, s.Resource, identity.MetadataURL(s.Resource))
		if anonymous {
			fmt.Fprintf(w, "toolgate: --allow-anonymous: a request without a token is nobody.\n")
		} else {
			fmt.Fprintf(w, "toolgate: a request without a token gets 401.\n")
		}
	}
}

// newJWT makes the JWT verifier of cfg.Auth for the address listened at;
// nil when no issuer is configured. An issuer that cannot be reached, or
// is slow, is no error and does not hold the start: toolgate serves the
// tokens file meanwhile and answers JWT callers 503 with Retry-After at
// once until the issuer's keys have been fetched (in the background,
// retried every identity.RetryInterval), so a restart of the
// authorization server never takes toolgate down with it. Only invalid
// settings are an error, and an issuer on every address without
// auth.resource (the default resource would name no host clients use).
func newJWT(ctx context.Context, cfg Config, addr string, log *slog.Logger) (*identity.JWT, error) {
	if !cfg.Auth.Enabled() {
		return nil, nil
	}
	s := cfg.Auth.WithDefaults(addr)
	if host, _, err := net.SplitHostPort(addr); cfg.Auth.Resource == "" && err == nil && (host == "" || net.ParseIP(host).IsUnspecified()) {
		// config.Serve.Validate says so first; an embedder may not call it.
		return nil, fmt.Errorf("auth.resource (--resource) is required when listening on every address (%s): the default would advertise %s as this server's URI", addr, s.Resource)
	}
	if cfg.Auth.Resource == "" && !httpserve.IsLoopback(addr) {
		log.Warn("toolgate: no --resource: tokens must be issued for the address listened at; set --resource to the URI clients use",
			slog.String("resource", s.Resource))
	}
	// In the background: a slow issuer never holds the start, and JWT
	// callers get 503 at once until its keys are known; the key set is
	// checked again every identity.KeyCheckInterval.
	opts := append([]identity.Option{identity.WithLogger(log), identity.WithBackground()}, cfg.IdentityOptions...)
	v, err := identity.NewJWT(ctx, s, opts...)
	if err != nil {
		return nil, err
	}
	log.Info("toolgate: accepting JWT access tokens", slog.String("issuer", s.Issuer), slog.String("resource", s.Resource),
		slog.Any("audiences", s.Audiences), slog.String("subject_claim", s.SubjectClaim), slog.String("roles_claim", s.RolesClaim))
	return v, nil
}

// Health is what GET /healthz?verbose=1 answers to the operator role;
// anyone else gets Status and Revision only (httpserve.Options.Health).
type Health struct {
	Status string `json:"status"`
	// Revision is what serves: the engine's revision number, or the
	// bundle's manifest revision when serving a bundle (docs/contract.md
	// §14).
	Revision      Revision  `json:"revision"`
	Hash          string    `json:"hash"`
	LoadedAt      time.Time `json:"loaded_at"`
	LastError     string    `json:"last_error,omitempty"`
	LastErrorAt   time.Time `json:"last_error_at,omitzero"`
	Reloads       uint64    `json:"reloads"`
	ReloadFailure uint64    `json:"reload_failures"`
	// BundleRevision is the manifest revision of the OPA bundle serving
	// (docs/contract.md §14), absent without a bundle.
	BundleRevision string `json:"bundle_revision,omitempty"`
	// Bundle is the bundle's own status (ETag, read from disk at start,
	// last refusal), absent without a bundle.
	Bundle *bundle.Status `json:"bundle,omitempty"`
	// Shadow is the shadow candidate's status (docs/shadow.md), absent
	// without one.
	Shadow *shadow.Status `json:"shadow,omitempty"`
}

// Revision is /healthz's revision: a JSON string, the bundle's manifest
// revision, when Bundle is set; else a JSON number, the engine's revision
// number (each reload adds one).
type Revision struct {
	Number uint64
	Bundle string
}

// MarshalJSON implements json.Marshaler.
func (r Revision) MarshalJSON() ([]byte, error) {
	if r.Bundle != "" {
		return json.Marshal(r.Bundle)
	}
	return json.Marshal(r.Number)
}

// UnmarshalJSON implements json.Unmarshaler: a string is a bundle's
// revision, a number the engine's.
func (r *Revision) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		*r = Revision{}
		return json.Unmarshal(b, &r.Bundle)
	}
	*r = Revision{}
	return json.Unmarshal(b, &r.Number)
}

// health is eng's Health, with the bundle's status when b is not nil.
func health(eng *engine.Engine, b *bundle.Client) Health {
	st := eng.Status()
	h := Health{Status: "ok", Revision: Revision{Number: st.Revision, Bundle: st.Label}, Hash: st.Hash, LoadedAt: st.LoadedAt, LastError: st.LastError, LastErrorAt: st.LastErrorAt, Reloads: st.Reloads, ReloadFailure: st.ReloadFailures,
		BundleRevision: st.Label}
	if b != nil {
		st := b.Status()
		h.Bundle = &st
	}
	if h.LastError != "" {
		h.Status = "degraded"
	}
	return h
}

func openLedger(ctx context.Context, s *config.Serve) (store.Store, error) {
	spec, err := s.LedgerStore()
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	return spec.Create(ctx)
}

// openApprovals builds the approval gate over the ledger's store (docs/contract.md
// §13), with its pruner and, when configured, its webhook.
func (g *Gateway) openApprovals(st store.Store) (*approvals.Gate, error) {
	as, ok := st.(store.ApprovalStore)
	if !ok {
		return nil, fmt.Errorf("ledger: the store %T keeps no approval requests", st)
	}
	set := g.cfg.Approvals
	opts := approvals.Options{Settings: set, Logger: g.log, OnState: g.m.Approval}
	if set.Webhook != "" {
		wh := approvals.NewWebhook(set.Webhook, approvals.WebhookOptions{Logger: g.log, OnResult: g.m.ApprovalWebhook})
		g.onClose(wh.Close)
		opts.OnRequest = wh.Notify
	}
	gate := approvals.New(as, opts)
	g.goUntilClose(func(ctx context.Context) { gate.RunPruner(ctx, 0) })
	return gate, nil
}

func openAudit(spec string, stderr io.Writer) (io.Writer, func() error, error) {
	if spec == "" || spec == "-" {
		return stderr, func() error { return nil }, nil
	}
	f, err := os.OpenFile(spec, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("audit: %w", err)
	}
	return f, f.Close, nil
}

// warnMismatches logs what `toolgate check` reports of the rows and the
// methods at hand (inspect.MethodFindings): rows whose method is not
// registered or lacks a declared argument, whose calls will fail.
func warnMismatches(log *slog.Logger, reg *registry.Registry, methods methods.Set) {
	for _, f := range inspect.MethodFindings(reg, methods, "") {
		log.Warn("toolgate: a row does not fit its method; its calls fail", slog.String("tool", f.Tool), slog.String("field", f.Field), slog.String("problem", f.Message))
	}
}

// noteClosedImports says, for each importing upstream whose section the
// registry's sections do not list, that its imported tools are granted to
// nobody until the operator grants the section (docs/contract.md §15).
func noteClosedImports(log *slog.Logger, reg *registry.Registry, ups []upstream.Settings) {
	for _, u := range ups {
		if !u.Import {
			continue
		}
		section := u.Section
		if section == "" {
			section = upstream.DefaultSection(u.Name)
		}
		if _, ok := reg.Sections[section]; !ok {
			log.Info("toolgate: the tools imported from an upstream are granted to nobody until the registry's sections list their section",
				slog.String("upstream", u.Name), slog.String("section", section))
		}
	}
}
