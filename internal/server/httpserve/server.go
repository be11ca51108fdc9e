package httpserve

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/identity"
	"github.com/toolgate/toolgate/internal/sdklog"
	"github.com/toolgate/toolgate/internal/servesettings"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/toolcall"
)

// DefaultShutdownGrace is how long ListenAndServe lets in-flight requests
// finish once its context is done.
const DefaultShutdownGrace = 10 * time.Second

// Defaults of the limits in Options (docs/contract.md §11), as the
// settings declare them (servesettings).
const (
	DefaultSessionTimeout = servesettings.DefaultSessionTimeout
	DefaultMaxSessions    = servesettings.DefaultMaxSessions
	DefaultReadTimeout    = servesettings.DefaultReadTimeout
	DefaultIdleTimeout    = servesettings.DefaultIdleTimeout
	DefaultMaxConnections = servesettings.DefaultMaxConnections
	DefaultAdminRole      = servesettings.DefaultAdminRole
)

// Options configure a Server: its settings (Settings, the limits, origins,
// operator role and metrics address `toolgate serve` reads), and what the
// caller builds.
type Options struct {
	Settings
	// MCPServer builds the MCP server every HTTP session connects to
	// (required), with the HTTP transport's receiving middleware outermost
	// in the server's one list (mcpadapter.Layers.Transport; the binary's:
	// internal/frontdoor.Server.MCPServer), and its caller read by
	// CallerFromRequest. New calls it once.
	MCPServer func(transport []mcpadapter.Layer) *mcp.Server
	// Tokens are the bearer tokens of the tokens file, asked first: an
	// *identity.Tokens, or an *identity.TokensFile that reloads. With
	// neither Tokens nor JWT, every HTTP caller is nobody and an
	// Authorization header is ignored.
	Tokens identity.HashLookup
	// JWT verifies the access tokens of an OAuth 2.1 authorization server
	// (docs/contract.md §12), asked after Tokens; nil: none. With it, a request
	// without a token gets 401 (unless AllowAnonymous), a refusal's
	// WWW-Authenticate names the Protected Resource Metadata, and that
	// metadata is served, to anyone, at JWT.Settings().MetadataPaths().
	JWT *identity.JWT
	// AllowAnonymous serves a request without a token as nobody even
	// with JWT set (--allow-anonymous).
	AllowAnonymous bool
	// Health answers GET /healthz; its value is encoded as JSON. Anyone
	// gets its "status" and "revision" members only; the whole value is
	// for a caller with the operator role, at GET /healthz?verbose=1. Nil
	// answers {"status":"ok"}.
	Health func() any
	// Metrics, when set, is mounted at /metrics for callers with the
	// operator role, and served to anyone at MetricsAddr.
	Metrics http.Handler
	// Logger receives authentication failures (never a token) and serving
	// errors; nil discards them.
	Logger *slog.Logger
	// ShutdownGrace bounds how long in-flight requests may take to finish
	// on shutdown; zero is DefaultShutdownGrace.
	ShutdownGrace time.Duration
	// MaxStreamsPerCaller caps the streams (a session's GET /mcp,
	// subscriptions/listen, the console's event streams) one caller may
	// have open at once: one more gets HTTP 429. Nobody gets no stream.
	// Zero is DefaultMaxStreamsPerCaller, negative no cap.
	MaxStreamsPerCaller int
	// MaxStreamsPerAddress caps the streams open at once from one remote
	// host, likewise. Zero is DefaultMaxStreamsPerAddress, negative no cap.
	MaxStreamsPerAddress int
	// OnStream, when set, counts streams refused ("nobody", "per_caller",
	// "per_address") and closed to make room ("closed_oldest").
	OnStream func(event string)
	// ToolSchema, when set, answers the inputSchema of a tool as a caller
	// sees it listed: a 2026-07-28 tools/call whose Mcp-Param headers
	// disagree with the x-mcp-header annotations of that schema gets HTTP
	// 400 and a HeaderMismatch (-32020) error, as from the go-sdk. Nil: only
	// the tools registered with the SDK server are checked (by the SDK).
	ToolSchema ToolSchemaFunc
	// Streamable configures the go-sdk streamable handler; nil uses its
	// defaults (stateful sessions).
	Streamable *mcp.StreamableHTTPOptions
	// Approvals, when set, is mounted at /approvals and /approvals/ (docs/contract.md
	// §13), behind the same Host/Origin guard and bearer tokens as /mcp:
	// an unknown token gets 401, and the handler reads the caller with
	// RequestCaller (nil: nobody).
	Approvals http.Handler
	// Console, when set, is mounted at /console and /console/ (the
	// operator console), like Approvals: behind the guard, an unknown
	// token gets 401, the handler reads the caller with RequestCaller.
	Console http.Handler
	// Routes are further handlers by http.ServeMux pattern (decision
	// logs, tracing), served like Approvals: behind the Host/Origin guard
	// and the bearer tokens, with the caller at RequestCaller. A pattern
	// that collides with one of the Server's own panics, as
	// http.ServeMux.Handle does.
	Routes map[string]http.Handler
}

// Server serves a governed MCP server over streamable HTTP: the MCP
// endpoint at /mcp, GET /healthz and, when given, /metrics, /approvals
// and /console. It is an
// http.Handler; ListenAndServe adds graceful shutdown and the connection
// limits.
//
// Every request, on every path, is refused with HTTP 403 when it arrives
// on a loopback address with a Host that is not a loopback name (DNS
// rebinding), or when it has an Origin that is neither the listener's own
// nor one of Options.AllowedOrigins. A request body must arrive within
// Options.ReadTimeout and is read once, through a limit of
// mcpadapter.MaxBodyBytes, before anything decodes it.
//
// Authentication (docs/contract.md §8, §12) is an identity.Chain: the tokens file
// first, then JWT access tokens. A request without an Authorization header
// is nobody, except that with JWT set (and not AllowAnonymous) it gets 401
// with `WWW-Authenticate: Bearer resource_metadata="…"`. A request with one
// must carry a token the tokens file lists or that verifies, else it gets
// 401 with `WWW-Authenticate: Bearer error="invalid_token"` (and
// resource_metadata with JWT set); the reason is logged, never sent. While
// the issuer's keys have never been fetched, a token the tokens file does
// not list gets 503 with Retry-After. The token decides the request's
// caller before its body is read. The caller is per request, never per
// session: the adapter reads it from each request's TokenInfo (see
// CallerFromRequest).
//
// Sessions (the revisions that have them) belong to whoever opened them: a
// session opened by nobody serves only requests without credentials, one
// opened with a token only requests whose token has the same subject from
// the same source (the tokens file's "alice" and the issuer's "alice" are
// two owners); anything else gets HTTP 403 and the session is untouched,
// whatever the method (POST, GET, DELETE). A session ends after Options.SessionTimeout
// without requests; at most Options.MaxSessions are alive at once.
//
// Streams (a session's GET /mcp, subscriptions/listen, and the console's
// through OpenStream) are for signed-in callers only, at most
// Options.MaxStreamsPerCaller per caller and MaxStreamsPerAddress per
// remote host (HTTP 429 beyond), and hold at most three quarters of
// Options.MaxConnections: one more closes the oldest stream's connection.
// Where callers can sign in, sessions opened by nobody hold at most a
// quarter of Options.MaxSessions.
//
// GET /healthz answers {"status","revision"} to anyone; with ?verbose=1
// it answers the whole health to a caller with the operator role
// (Options.AdminRole), 401 to a request without a valid token and 403 to a
// caller without the role. /metrics is for the operator role likewise.
type Server struct {
	opts     Options
	log      *slog.Logger
	mcp      *mcp.Server // Options.MCPServer's
	mux      *http.ServeMux
	inflight tracker
	bodies   bodies
	sessions sessions
	streams  *streamSet
	// metadataURL is the Protected Resource Metadata's URL, named in
	// refusals' WWW-Authenticate; "" without JWT.
	metadataURL string
	// stopping is cancelled when the shutdown grace period runs out; the
	// contexts of requests still running derive from it.
	stopping context.Context
	abort    context.CancelFunc
}

// New returns a Server. It panics when Options.MCPServer is nil.
//
// New hands Options.MCPServer the HTTP transport's receiving middleware,
// outermost first: they keep account of the sessions, cancel the context
// of every request still running when the shutdown grace period runs
// out, end a subscriptions/listen stream when its token expires, and hand
// a JWT caller's access token on (LayerSessions, LayerAbort,
// LayerListenEnd, LayerAccessToken).
func New(opts Options) *Server {
	if opts.MCPServer == nil {
		panic("httpserve: Options.MCPServer is required")
	}
	if opts.ShutdownGrace <= 0 {
		opts.ShutdownGrace = DefaultShutdownGrace
	}
	if opts.ReadTimeout <= 0 {
		opts.ReadTimeout = DefaultReadTimeout
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.MaxConnections == 0 {
		opts.MaxConnections = DefaultMaxConnections
	}
	if opts.MaxSessions == 0 {
		opts.MaxSessions = DefaultMaxSessions
	}
	if opts.MaxStreamsPerCaller == 0 {
		opts.MaxStreamsPerCaller = DefaultMaxStreamsPerCaller
	}
	if opts.MaxStreamsPerAddress == 0 {
		opts.MaxStreamsPerAddress = DefaultMaxStreamsPerAddress
	}
	if opts.AdminRole == "" {
		opts.AdminRole = DefaultAdminRole
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{opts: opts, log: log, mux: http.NewServeMux()}
	s.sessions.max = opts.MaxSessions
	if opts.MaxSessions > 0 && (opts.Tokens != nil || opts.JWT != nil) {
		// Where callers can sign in, nobody never fills the cap for them.
		s.sessions.maxNobody = max(1, opts.MaxSessions*nobodySessionShareNum/nobodySessionShareDen)
	} else {
		s.sessions.maxNobody = -1
	}
	streamCap := 0
	if opts.MaxConnections > 0 {
		streamCap = max(1, opts.MaxConnections*streamShareNum/streamShareDen)
	}
	s.streams = newStreamSet(opts.MaxStreamsPerCaller, opts.MaxStreamsPerAddress, streamCap)
	s.streams.on = opts.OnStream
	if opts.JWT != nil {
		s.metadataURL = identity.MetadataURL(opts.JWT.Settings().Resource)
	}
	s.stopping, s.abort = context.WithCancel(context.Background())
	s.mcp = opts.MCPServer(s.layers())
	so := &mcp.StreamableHTTPOptions{}
	if opts.Streamable != nil {
		*so = *opts.Streamable
	}
	if so.Logger == nil {
		so.Logger = sdklog.For(opts.Logger)
	}
	switch {
	case opts.SessionTimeout < 0:
		so.SessionTimeout = 0
	case opts.SessionTimeout > 0:
		so.SessionTimeout = opts.SessionTimeout
	case so.SessionTimeout == 0:
		so.SessionTimeout = DefaultSessionTimeout
	}
	srv := s.mcp
	getServer := func(*http.Request) *mcp.Server { return srv }
	var h http.Handler = mcp.NewStreamableHTTPHandler(getServer, so)
	if !so.Stateless {
		// The SDK's stateful handler does not serve the sessionless
		// 2026-07-28 revision; its requests (which name their revision in
		// a header) go to a stateless handler on the same server, so every
		// revision the SDK supports is served (docs/contract.md §6).
		sl := *so
		sl.Stateless = true
		h = byProtocol(h, mcp.NewStreamableHTTPHandler(getServer, &sl))
	}
	// Cheap checks first: Host and Origin (ServeHTTP), the caller (a
	// header), the session's owner and the session cap; only then is the
	// body read, and decoded.
	s.mux.Handle("/mcp", s.authenticate(s.sessions.gate(!so.Stateless, mcpadapter.WrapHTTP(s.paramHeaders(s.streamGate(h))))))
	s.mux.HandleFunc("GET /healthz", s.healthz)
	if opts.JWT != nil {
		// Public by design (RFC 9728), so outside authentication; the
		// Host and Origin checks of ServeHTTP still apply.
		settings := opts.JWT.Settings()
		for _, p := range settings.MetadataPaths() {
			s.mux.Handle(p, settings.MetadataHandler())
		}
	}
	if opts.Metrics != nil {
		s.mux.Handle("/metrics", s.operator(opts.Metrics))
	}
	if opts.Approvals != nil {
		h := s.withCaller(opts.Approvals)
		s.mux.Handle("/approvals", h)
		s.mux.Handle("/approvals/", h)
	}
	if opts.Console != nil {
		h := s.withCaller(opts.Console)
		s.mux.Handle("/console", h)
		s.mux.Handle("/console/", h)
	}
	for _, p := range slices.Sorted(maps.Keys(opts.Routes)) {
		s.mux.Handle(p, s.withCaller(opts.Routes[p]))
	}
	return s
}

// withCaller finds the caller with the chain every path uses (identify:
// the tokens file, then JWT; a refused token is answered by refuse, no
// token is nobody) and hands it to next, for RequestCaller.
func (s *Server) withCaller(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.authOn() {
			p, err := s.identify(r)
			if err != nil && !errors.Is(err, identity.ErrNoToken) {
				s.refuse(w, r, err)
				return
			}
			if p.caller != nil {
				ctx := context.WithValue(r.Context(), requestCallerKey{}, identity.CloneCaller(p.caller))
				r = r.WithContext(context.WithValue(ctx, ownerKey{}, p.owner))
			} else {
				w = s.challenging(w)
			}
		}
		next.ServeHTTP(w, r)
	})
}

type requestCallerKey struct{}

// RequestCaller is the caller of a request served to Options.Approvals
// and Options.Console; nil is nobody.
func RequestCaller(r *http.Request) *toolcall.Caller {
	c, _ := r.Context().Value(requestCallerKey{}).(*toolcall.Caller)
	return c
}

// SessionCount returns the number of sessions alive (or being opened).
func (s *Server) SessionCount() int { return s.sessions.count() }

// StreamCount returns the streams open, and how many were closed so far
// to make room for newer ones (streams at their share of the
// connections, or connections at their cap).
func (s *Server) StreamCount() (open int, closedOldest uint64) { return s.streams.count() }

func (s *Server) cancelOnAbort(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stop := context.AfterFunc(s.stopping, cancel)
		defer stop()
		return next(ctx, method, req)
	}
}

// methodSubscriptionsListen opens the notification stream of the
// 2026-07-28 revision: its handler lasts as long as its context.
const methodSubscriptionsListen = "subscriptions/listen"

// Names of the HTTP transport's receiving middleware (Layers).
const (
	LayerSessions    = "http.sessions"
	LayerAbort       = "http.abort"
	LayerListenEnd   = "http.listen-expiry"
	LayerAccessToken = "http.access-token"
)

// layers are the HTTP transport's receiving middleware, outermost first:
// the sessions' accounting, the cancellation at the end of the shutdown
// grace, the end of a subscriptions/listen stream when its token expires,
// and the access token handed to the request.
func (s *Server) layers() []mcpadapter.Layer {
	return []mcpadapter.Layer{
		{Name: LayerSessions, Middleware: s.sessions.track},
		{Name: LayerAbort, Middleware: s.cancelOnAbort},
		{Name: LayerListenEnd, Middleware: endListenAtExpiry},
		{Name: LayerAccessToken, Middleware: withAccessToken},
	}
}

// endListenAtExpiry ends a subscriptions/listen stream when the credential
// that opened it expires (the TokenInfo's Expiration, a JWT's exp): its
// notifications tell the holder that its listing changed, which is not
// for a caller whose token has expired. Other methods are untouched: a
// call accepted with a valid token runs to its end.
func endListenAtExpiry(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == methodSubscriptionsListen {
			if extra := req.GetExtra(); extra != nil && extra.TokenInfo != nil && !extra.TokenInfo.Expiration.IsZero() {
				var cancel context.CancelFunc
				ctx, cancel = context.WithDeadline(ctx, extra.TokenInfo.Expiration)
				defer cancel()
			}
		}
		return next(ctx, method, req)
	}
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.guard(w, r) {
		return
	}
	if r.Body != nil && r.Body != http.NoBody {
		b, ok := s.bodies.start(w, r.Body, s.opts.ReadTimeout, &s.inflight)
		if !ok {
			w.Header().Set("Connection", "close")
			http.Error(w, "shutting down", http.StatusServiceUnavailable)
			return
		}
		defer b.finish()
		// A copy: the server's own request keeps its body, whose unread
		// size tells it to close the connection rather than drain it.
		r = r.WithContext(r.Context())
		r.Body = b
	}
	s.mux.ServeHTTP(w, r)
}

// healthz answers status and revision to anyone, the whole health at
// ?verbose=1 to the operator role.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	verbose := r.URL.Query().Get("verbose")
	if verbose != "" && verbose != "0" && verbose != "false" {
		s.operator(http.HandlerFunc(s.healthzVerbose)).ServeHTTP(w, r)
		return
	}
	var v any = map[string]string{"status": "ok"}
	if s.opts.Health != nil {
		v = s.opts.Health()
	}
	body, err := json.Marshal(v)
	if err == nil {
		// Only status and revision: the rest (the last reload error names
		// rows and files) is the operator's.
		var short struct {
			Status   json.RawMessage `json:"status,omitempty"`
			Revision json.RawMessage `json:"revision,omitempty"`
		}
		if err = json.Unmarshal(body, &short); err == nil {
			body, err = json.Marshal(short)
		}
	}
	s.writeHealth(w, body, err)
}

func (s *Server) healthzVerbose(w http.ResponseWriter, _ *http.Request) {
	var v any = map[string]string{"status": "ok"}
	if s.opts.Health != nil {
		v = s.opts.Health()
	}
	body, err := json.Marshal(v)
	s.writeHealth(w, body, err)
}

func (s *Server) writeHealth(w http.ResponseWriter, body []byte, err error) {
	if err != nil {
		s.log.Error("healthz: cannot encode health", slog.Any("error", err))
		http.Error(w, "cannot encode health", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(append(body, '\n'))
}

// CallerFromRequest is the mcpadapter.CallerFunc of a Server, the one
// hand-off of a request's caller to the adapter: the caller of the bearer
// token the request came with, as a copy the adapter may keep, and its
// identity source ("token", "jwt"), so that approvals and idempotency keys
// tell the tokens file's "alice" from the issuer's. Without a token it is
// nobody, from "".
func CallerFromRequest(_ context.Context, req mcp.Request) (*toolcall.Caller, string) {
	p := principalOf(req)
	if p == nil {
		return nil, ""
	}
	return identity.CloneCaller(p.caller), string(p.source)
}

var _ mcpadapter.CallerFunc = CallerFromRequest

// sessionlessRevision is the first protocol revision that needs no session.
const sessionlessRevision = "2026-07-28"

// byProtocol sends requests of a sessionless protocol revision (by their
// Mcp-Protocol-Version header) to sessionless, the others to stateful.
func byProtocol(stateful, sessionless http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if v := r.Header.Get("Mcp-Protocol-Version"); v >= sessionlessRevision && r.Header.Get("Mcp-Session-Id") == "" {
			sessionless.ServeHTTP(w, r)
			return
		}
		stateful.ServeHTTP(w, r)
	})
}
