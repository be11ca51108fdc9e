// Package gateway assembles a governed MCP server from settings: the engine
// (registry, policies, reload), the methods (the demo methods and upstream
// MCP servers), the adapter with the shipped hooks (idempotency ledger,
// audit trail, metrics), and a transport (stdio or streamable HTTP). It is
// what `toolgate serve` runs; an embedding host can run it too.
//
//	cfg := gateway.Config{Serve: config.Serve{HTTP: "127.0.0.1:8787"}, Stdout: os.Stdout, Stderr: os.Stderr}
//	_ = cfg.SetDefaults()
//	err := gateway.Run(ctx, cfg)
package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/console"
	"github.com/toolgate/toolgate/demo"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/hooks/approvals"
	"github.com/toolgate/toolgate/hooks/audit"
	"github.com/toolgate/toolgate/hooks/ledger"
	"github.com/toolgate/toolgate/httpserve"
	"github.com/toolgate/toolgate/identity"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/metrics"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/upstream"
)

// Version is reported to MCP clients as the server's version.
var Version = "dev"

// upstreamStartWait bounds how long start-up (and a revision build) waits
// for upstreams: the rows of one that answers later come with a reload.
const upstreamStartWait = time.Second

// Config is everything Run needs: the settings of `toolgate serve`
// (config.Serve, SPEC §8; call its SetDefaults first) and the process's
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
	// ExtraMethods are Go tool methods served besides the demo methods.
	ExtraMethods mcpadapter.Methods
	// IdentityOptions configure the JWT verifier when Auth is enabled
	// (an HTTP client trusting the organisation's CA, say); the logger is
	// the gateway's unless one is given.
	IdentityOptions []identity.Option
}

// Bundled reports whether the configuration serves the bundled example.
func (c *Config) Bundled() bool { return c.Registry == "" && c.Policy == "" }

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

// Run serves until ctx is done (HTTP: then shuts down gracefully, letting
// calls in flight finish) or, for stdio, until the client closes stdin.
func Run(ctx context.Context, cfg Config) (err error) {
	if cfg.Stderr == nil {
		cfg.Stderr = io.Discard
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(cfg.Stderr, nil))
	}
	var closers []func() error
	defer func() {
		for i := len(closers) - 1; i >= 0; i-- {
			if cerr := closers[i](); cerr != nil && err == nil {
				err = cerr
			}
		}
	}()

	var engRef atomic.Pointer[engine.Engine]
	m := metrics.New()

	// Methods: the demo methods (and the host's), then the upstream MCP servers.
	goMethods := demo.Methods()
	for name, m := range cfg.ExtraMethods {
		goMethods[name] = m
	}
	var methods mcpadapter.MethodSet = goMethods
	var engOpts []engine.Option
	engOpts = append(engOpts, engine.WithLogger(log), engine.WithTimeout(cfg.EvalTimeout))
	if cfg.Capabilities != "" {
		caps, err := engine.LoadCapabilities(cfg.Capabilities)
		if err != nil {
			return err
		}
		engOpts = append(engOpts, engine.WithCapabilities(caps))
	}
	if len(cfg.Upstreams) > 0 {
		ups := UpstreamConfigs(cfg.Upstreams)
		// An upstream whose tool list changed may change the imported rows:
		// rebuild the revision (eng is set below, before any upstream connects).
		toolsChanged := func(string) {
			if e := engRef.Load(); e != nil {
				if _, err := e.Reload(context.WithoutCancel(ctx)); err != nil {
					log.Warn("toolgate: reload after an upstream's tools changed failed", slog.Any("error", err))
				}
			}
		}
		pinsPath, err := pinsFile(&cfg.Serve)
		if err != nil {
			return err
		}
		pool, err := upstream.NewPool(ups, &upstream.Options{Logger: log, Stderr: cfg.Stderr, ToolsChanged: toolsChanged,
			Pins: pinsPath, OnDrift: func(server, _ string) { m.UpstreamDrift(server) }})
		if err != nil {
			return err
		}
		closers = append(closers, pool.Close)
		if pinsPath != "" && cfg.WatchOn() {
			// Pins accepted while serving (toolgate pins accept) rebuild the revision.
			pinsCtx, stopPins := context.WithCancel(ctx)
			pinsDone := make(chan struct{})
			go func() { defer close(pinsDone); watchPins(pinsCtx, log, pinsPath, func() { toolsChanged("") }) }()
			closers = append(closers, func() error { stopPins(); <-pinsDone; return nil })
		}
		// Connect in the background and wait a little, so the first revision
		// usually has the imported rows; an upstream that is down or hangs
		// must not hold the server back (its rows come with ToolsChanged).
		connected := make(chan struct{})
		go func() {
			defer close(connected)
			if err := pool.Connect(ctx); err != nil {
				log.Warn("toolgate: an upstream is not reachable; its tools answer with an internal error until it is", slog.Any("error", err))
			}
		}()
		select {
		case <-connected:
		case <-time.After(upstreamStartWait):
			log.Warn("toolgate: upstreams still connecting; serving without waiting for them")
		}
		methods = upstream.Chain(methods, pool)
		for _, u := range cfg.Upstreams {
			if u.Import {
				engOpts = append(engOpts, engine.WithRegistryHook(func(ctx context.Context, reg *registry.Registry) (*registry.Registry, error) {
					ctx, cancel := context.WithTimeout(ctx, upstreamStartWait)
					defer cancel()
					rows, err := pool.Import(ctx) // fails for a pins file it cannot read (SPEC §15)
					if err != nil {
						return nil, err
					}
					return upstream.MergeRows(reg, rows), nil
				}))
				break
			}
		}
	}

	src, bundles, err := openSource(ctx, cfg, log)
	if err != nil {
		return err
	}
	eng, err := engine.New(ctx, src, engOpts...)
	if err != nil {
		return err
	}
	closers = append(closers, runBundle(ctx, bundles, eng))
	engRef.Store(eng)
	rev := eng.Current()
	log.Info("toolgate: loaded", slog.String("revision", rev.String()), slog.Int("tools", len(rev.Registry().Tools)))
	warnMismatches(log, rev.Registry(), methods)
	noteClosedImports(log, rev.Registry(), cfg.Upstreams)

	// One adapter (and MCP server) per transport: the caller comes from the
	// flags over stdio and from each request's bearer token over HTTP.
	store, err := openLedger(ctx, cfg.Ledger)
	if err != nil {
		return err
	}
	closers = append(closers, store.Close)
	led := ledger.New(store, ledger.Options{Logger: log, OnReplay: m.LedgerReplay, OnConflict: m.LedgerConflict, Retention: cfg.LedgerRetention})
	pruneCtx, stopPruner := context.WithCancel(ctx)
	pruned := make(chan struct{})
	go func() { defer close(pruned); led.RunPruner(pruneCtx, 0) }()
	closers = append(closers, func() error { stopPruner(); <-pruned; return nil })
	gate, err := openApprovals(pruneCtx, cfg, store, log, m, &closers)
	if err != nil {
		return err
	}
	auditW, closeAudit, err := openAudit(cfg.Audit, cfg.Stderr)
	if err != nil {
		return err
	}
	aud := audit.New(auditW, audit.Options{Logger: log, OnDrop: m.AuditDropped})
	closers = append(closers, closeAudit, aud.Close)
	act := console.NewActivity(0) // the console's live tail (gateway/console.go)
	impl := &mcp.Implementation{Name: "toolgate", Version: Version}
	newServer := func(caller mcpadapter.CallerFunc) (*mcpadapter.Adapter, *mcp.Server) {
		a := mcpadapter.New(mcpadapter.Options{Revisions: eng, Methods: methods, Caller: caller, Logger: log, HookTimeout: cfg.HookTimeout,
			ListFallback: listFallback(cfg.ListFallback), Approvals: gate})
		a.AddHook(led.Hook())
		a.AddHook(aud.Hook())
		a.AddHook(m.Hook())
		a.AddHook(act.Hook())
		return a, a.NewServer(impl, &mcp.ServerOptions{Logger: log})
	}
	type served struct {
		adapter *mcpadapter.Adapter
		server  *mcp.Server
	}
	var servers []served
	var stdioSrv, httpSrv *mcp.Server
	if cfg.Stdio {
		var c *engine.Caller
		if cfg.As != "" {
			c = &engine.Caller{Subject: cfg.As, Roles: append([]string{}, cfg.Roles...)}
		}
		var a *mcpadapter.Adapter
		a, stdioSrv = newServer(mcpadapter.StaticCaller(c))
		servers = append(servers, served{a, stdioSrv})
	}
	if cfg.HTTP != "" {
		var a *mcpadapter.Adapter
		a, httpSrv = newServer(httpserve.CallerFromRequest)
		servers = append(servers, served{a, httpSrv})
	}

	// Every new revision, from a file reload or from an upstream whose
	// tools changed (with or without --watch), tells the sessions whose
	// listing changed (SPEC §9, §15).
	notifyCtx, stopNotify := context.WithCancel(ctx)
	closers = append(closers, func() error { stopNotify(); return nil })
	stopListen := eng.Listen(func(old, next *engine.Revision) {
		for _, s := range servers {
			go s.adapter.NotifyListingChanged(notifyCtx, s.server, old, next)
		}
	})
	closers = append(closers, func() error { stopListen(); return nil })

	if cfg.WatchOn() {
		watchCtx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		closers = append(closers, func() error { stop(); <-done; return nil })
		go func() {
			defer close(done)
			err := eng.Watch(watchCtx, engine.WatchOptions{
				OnReload: func(old, next *engine.Revision) {
					m.ReloadOK()
					log.Info("toolgate: reloaded", slog.String("revision", next.String()))
					warnMismatches(log, next.Registry(), methods)
				},
				OnError: func(error) { m.ReloadFailed() },
			})
			if err != nil && !errors.Is(err, engine.ErrNotWatchable) {
				log.Error("toolgate: watching files failed; reload is off", slog.Any("error", err))
			}
		}()
	}

	errc := make(chan error, 2)
	runCtx, stopAll := context.WithCancel(ctx)
	defer stopAll()
	if stdioSrv != nil {
		in, out := cfg.Stdin, cfg.Stdout
		if in == nil {
			in = os.Stdin
		}
		if out == nil {
			out = os.Stdout
		}
		if httpSrv == nil && cfg.Ready != nil {
			cfg.Ready(nil)
		}
		go func() {
			err := stdioSrv.Run(runCtx, mcpadapter.WrapTransport(answerBeforeEOF{&mcp.IOTransport{Reader: in, Writer: out}}))
			if err != nil && (runCtx.Err() != nil || errors.Is(err, io.EOF)) {
				err = nil
			}
			errc <- err // the client closed stdin: stop serving
		}()
	}
	if httpSrv != nil {
		// Listen first: the default resource URI (SPEC §12) is the address
		// listened at, which --http 127.0.0.1:0 leaves to the system.
		ln, err := net.Listen("tcp", cfg.HTTP)
		if err != nil {
			return fmt.Errorf("httpserve: %w", err)
		}
		jwt, err := newJWT(ctx, cfg, ln.Addr().String(), log)
		if err != nil {
			_ = ln.Close()
			return err
		}
		var tokens *httpserve.Tokens
		var demoToken string
		switch {
		case cfg.Tokens != "":
			if tokens, err = httpserve.LoadTokens(cfg.Tokens); err != nil {
				_ = ln.Close()
				return err
			}
		case jwt != nil:
			// An operator who configured an issuer wants its callers: no
			// public demo token beside them.
		case cfg.demoTokenAllowed():
			demoToken, tokens = httpserve.DemoToken()
		default:
			log.Warn("toolgate: no --tokens: every HTTP caller is nobody and sees no tool" + demoTokenWithheld(cfg))
		}
		hs := httpserve.New(httpserve.Options{
			Server:         httpSrv,
			Tokens:         tokens,
			JWT:            jwt,
			AllowAnonymous: cfg.AllowAnonymous,
			Health:         func() any { return health(eng) },
			Metrics:        m.Handler(),
			Logger:         log,
			MetricsAddr:    cfg.MetricsAddr,
			AdminRole:      cfg.AdminRole,
			AllowedOrigins: cfg.AllowedOrigins,
			SessionTimeout: cfg.SessionTimeout,
			MaxSessions:    cfg.MaxSessions,
			ReadTimeout:    cfg.ReadTimeout,
			IdleTimeout:    cfg.IdleTimeout,
			MaxConnections: cfg.MaxConnections,
			Approvals:      gate.Handler(httpserve.RequestCaller),
			Console:        newConsole(cfg, eng, gate, act, jwt, runCtx.Done()),
		})
		welcome := cfg.Stdout
		if stdioSrv != nil {
			welcome = nil // stdout is the MCP stream
		}
		go func() {
			errc <- hs.Serve(runCtx, ln, func(a net.Addr) {
				if welcome != nil {
					printWelcome(welcome, a, demoToken, tokens, jwt, cfg.AllowAnonymous, demoTokenWithheld(cfg))
				} else {
					log.Info("toolgate: serving MCP (streamable HTTP)", slog.String("url", "http://"+a.String()+"/mcp"))
				}
				if cfg.Ready != nil {
					cfg.Ready(a)
				}
			})
		}()
	}
	err = <-errc
	stopAll()
	if stdioSrv != nil && httpSrv != nil {
		if err2 := <-errc; err == nil {
			err = err2
		}
	}
	return err
}

// listFallback maps the validated setting to the adapter's option.
func listFallback(s string) mcpadapter.ListFallback {
	if s == config.ListFallbackNone {
		return mcpadapter.ListFallbackNone
	}
	return mcpadapter.ListFallbackBase
}

func printWelcome(w io.Writer, a net.Addr, demoToken string, tokens *httpserve.Tokens, jwt *identity.JWT, anonymous bool, withheld string) {
	fmt.Fprintf(w, "toolgate: serving MCP (streamable HTTP) at http://%s/mcp\n", a)
	switch {
	case demoToken != "":
		fmt.Fprintf(w, "toolgate: the bundled example; connect with the demo token (subject demo, roles [admin]):\n")
		fmt.Fprintf(w, "  Authorization: Bearer %s\n", demoToken)
		fmt.Fprintf(w, "toolgate: without a token a client is nobody and sees no tool.\n")
	case tokens == nil && jwt == nil:
		fmt.Fprintf(w, "toolgate: no --tokens: every HTTP caller is nobody and sees no tool%s.\n", withheld)
	case tokens != nil:
		fmt.Fprintf(w, "toolgate: %d bearer tokens loaded.\n", tokens.Len())
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
// nil when no issuer is configured. An issuer that cannot be reached is no
// error: toolgate serves the tokens file meanwhile and answers JWT callers
// 503 with Retry-After until the issuer's keys have been fetched (retried
// at most every identity.RetryInterval), so a restart of the
// authorization server never takes toolgate down with it. Only invalid
// settings are an error.
func newJWT(ctx context.Context, cfg Config, addr string, log *slog.Logger) (*identity.JWT, error) {
	if !cfg.Auth.Enabled() {
		return nil, nil
	}
	s := cfg.Auth.WithDefaults(addr)
	if cfg.Auth.Resource == "" && !httpserve.IsLoopback(addr) {
		log.Warn("toolgate: no --resource: tokens must be issued for the address listened at; set --resource to the URI clients use",
			slog.String("resource", s.Resource))
	}
	opts := append([]identity.Option{identity.WithLogger(log)}, cfg.IdentityOptions...)
	fetchCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	v, err := identity.NewJWT(fetchCtx, s, opts...)
	if err != nil {
		return nil, err
	}
	if err := v.Ready(); err != nil {
		log.Warn("toolgate: the issuer's signing keys are not available yet; JWT callers get 503 with Retry-After until they are (a request retries the fetch, at most every 5s)",
			slog.String("issuer", s.Issuer), slog.String("jwks", s.JWKS))
	}
	log.Info("toolgate: accepting JWT access tokens", slog.String("issuer", s.Issuer), slog.String("resource", s.Resource),
		slog.Any("audiences", s.Audiences), slog.String("subject_claim", s.SubjectClaim), slog.String("roles_claim", s.RolesClaim))
	return v, nil
}

// Health is what GET /healthz?verbose=1 answers to the operator role;
// anyone else gets Status and Revision only (httpserve.Options.Health).
type Health struct {
	Status        string    `json:"status"`
	Revision      uint64    `json:"revision"`
	Hash          string    `json:"hash"`
	LoadedAt      time.Time `json:"loaded_at"`
	LastError     string    `json:"last_error,omitempty"`
	LastErrorAt   time.Time `json:"last_error_at,omitzero"`
	Reloads       uint64    `json:"reloads"`
	ReloadFailure uint64    `json:"reload_failures"`
	// BundleRevision is the manifest revision of the OPA bundle serving
	// (SPEC §14), absent without a bundle.
	BundleRevision string `json:"bundle_revision,omitempty"`
}

func health(eng *engine.Engine) Health {
	st := eng.Status()
	h := Health{Status: "ok", Revision: st.Revision, Hash: st.Hash, LoadedAt: st.LoadedAt, LastError: st.LastError, LastErrorAt: st.LastErrorAt, Reloads: st.Reloads, ReloadFailure: st.ReloadFailures,
		BundleRevision: st.Label}
	if h.LastError != "" {
		h.Status = "degraded"
	}
	return h
}

func openLedger(ctx context.Context, spec string) (ledger.Store, error) {
	if spec == "" || spec == "sqlite:" {
		dir, err := config.StateDir()
		if err != nil {
			return nil, fmt.Errorf("ledger: %w", err)
		}
		spec = "sqlite:" + filepath.Join(dir, "ledger.db")
	}
	if path, ok := strings.CutPrefix(spec, "sqlite:"); ok {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("ledger: %w", err)
		}
	}
	return ledger.OpenStore(ctx, spec)
}

// openApprovals builds the approval gate over the ledger's store (SPEC
// §13), with its pruner and, when configured, its webhook.
func openApprovals(ctx context.Context, cfg Config, store ledger.Store, log *slog.Logger, m *metrics.Metrics, closers *[]func() error) (*approvals.Gate, error) {
	as, ok := store.(ledger.ApprovalStore)
	if !ok {
		return nil, fmt.Errorf("ledger: the store %T keeps no approval requests", store)
	}
	opts := approvals.Options{Logger: log, OnState: m.Approval}
	if cfg.ApprovalWebhook != "" {
		wh := approvals.NewWebhook(cfg.ApprovalWebhook, approvals.WebhookOptions{Logger: log})
		*closers = append(*closers, wh.Close)
		opts.OnRequest = wh.Notify
	}
	gate := approvals.New(as, opts)
	done := make(chan struct{})
	pctx, stop := context.WithCancel(ctx)
	go func() { defer close(done); gate.RunPruner(pctx, 0) }()
	*closers = append(*closers, func() error { stop(); <-done; return nil })
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

// warnMismatches logs, like `toolgate check`, rows whose method is not
// registered or lacks a declared argument: such calls will fail.
func warnMismatches(log *slog.Logger, reg *registry.Registry, methods mcpadapter.MethodSet) {
	for i := range reg.Tools {
		t := &reg.Tools[i]
		m, ok := methods.Method(t.Method)
		if !ok {
			if !strings.HasPrefix(t.Method, "upstream:") {
				log.Warn("toolgate: a row names a method that is not registered", slog.String("tool", t.Name), slog.String("method", t.Method))
			}
			continue
		}
		for _, a := range t.Arguments {
			if !m.HasArgument(a.Name) {
				log.Warn("toolgate: a row declares an argument its method does not have; calls answer Unknown argument",
					slog.String("tool", t.Name), slog.String("method", t.Method), slog.String("argument", a.Name))
			}
		}
	}
}

// noteClosedImports says, for each importing upstream whose section the
// registry's sections do not list, that its imported tools are granted to
// nobody until the operator grants the section (SPEC §15).
func noteClosedImports(log *slog.Logger, reg *registry.Registry, ups []config.Upstream) {
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
