package httpserve

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/mcpadapter"
)

// CallerKey is the TokenInfo.Extra entry that carries the *engine.Caller
// of an authenticated request.
const CallerKey = "toolgate.caller"

// DefaultShutdownGrace is how long ListenAndServe lets in-flight requests
// finish once its context is done.
const DefaultShutdownGrace = 10 * time.Second

// Options configure a Server.
type Options struct {
	// Server is the MCP server every HTTP session connects to, typically
	// from mcpadapter.Adapter.NewServer with Caller set to CallerFromRequest
	// (required).
	Server *mcp.Server
	// Tokens are the bearer tokens accepted; nil: every HTTP caller is
	// nobody, and an Authorization header is ignored.
	Tokens *Tokens
	// Health answers GET /healthz; its value is encoded as JSON. Nil
	// answers {"status":"ok"}.
	Health func() any
	// Metrics, when set, is mounted at /metrics.
	Metrics http.Handler
	// Logger receives authentication failures (never a token) and serving
	// errors; nil discards them.
	Logger *slog.Logger
	// ShutdownGrace bounds how long in-flight requests may take to finish
	// on shutdown; zero is DefaultShutdownGrace.
	ShutdownGrace time.Duration
	// Streamable configures the go-sdk streamable handler; nil uses its
	// defaults (stateful sessions).
	Streamable *mcp.StreamableHTTPOptions
}

// Server serves a governed MCP server over streamable HTTP: the MCP
// endpoint at /mcp, GET /healthz and, when given, /metrics. It is an
// http.Handler; ListenAndServe adds graceful shutdown.
//
// Authentication (SPEC §8): a request without an Authorization header is
// nobody. With Tokens set, a request with one must carry a known bearer
// token, else it gets 401 with `WWW-Authenticate: Bearer error="invalid_token"`;
// a known token makes the request's caller the token's identity. The caller
// is per request, never per session: the adapter reads it from each
// request's TokenInfo (see CallerFromRequest).
//
// Sessions: the go-sdk handler binds a session to the TokenInfo.UserID
// (the subject) of the request that created it. A session created with a
// token answers 403 to any later request without a token or with a token of
// another subject. A session created by nobody has no owner: a later request
// with a token is served on it as that token's caller, one without as
// nobody. Neither way is a privilege gained: each request is decided with
// its own credentials, and the session carries no identity of its own.
type Server struct {
	opts     Options
	log      *slog.Logger
	mux      *http.ServeMux
	inflight tracker
	// stopping is cancelled when the shutdown grace period runs out; the
	// contexts of requests still running derive from it.
	stopping context.Context
	abort    context.CancelFunc
}

// New returns a Server. It panics when Options.Server is nil.
//
// New adds a receiving middleware to Options.Server, outermost, that
// cancels the context of every request still running when the shutdown
// grace period runs out. Give each Server its own *mcp.Server.
func New(opts Options) *Server {
	if opts.Server == nil {
		panic("httpserve: Options.Server is required")
	}
	if opts.ShutdownGrace <= 0 {
		opts.ShutdownGrace = DefaultShutdownGrace
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{opts: opts, log: log, mux: http.NewServeMux()}
	s.stopping, s.abort = context.WithCancel(context.Background())
	opts.Server.AddReceivingMiddleware(s.cancelOnAbort)
	so := &mcp.StreamableHTTPOptions{}
	if opts.Streamable != nil {
		*so = *opts.Streamable
	}
	if so.Logger == nil {
		so.Logger = opts.Logger
	}
	srv := opts.Server
	getServer := func(*http.Request) *mcp.Server { return srv }
	var h http.Handler = mcp.NewStreamableHTTPHandler(getServer, so)
	if !so.Stateless {
		// The SDK's stateful handler does not serve the sessionless
		// 2026-07-28 revision; its requests (which name their revision in
		// a header) go to a stateless handler on the same server, so every
		// revision the SDK supports is served (SPEC §6).
		sl := *so
		sl.Stateless = true
		h = byProtocol(h, mcp.NewStreamableHTTPHandler(getServer, &sl))
	}
	s.mux.Handle("/mcp", s.track(s.authenticate(mcpadapter.WrapHTTP(h))))
	s.mux.HandleFunc("GET /healthz", s.healthz)
	if opts.Metrics != nil {
		s.mux.Handle("/metrics", opts.Metrics)
	}
	return s
}

func (s *Server) cancelOnAbort(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stop := context.AfterFunc(s.stopping, cancel)
		defer stop()
		return next(ctx, method, req)
	}
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	var v any = map[string]string{"status": "ok"}
	if s.opts.Health != nil {
		v = s.opts.Health()
	}
	body, err := json.Marshal(v)
	if err != nil {
		s.log.Error("healthz: cannot encode health", slog.Any("error", err))
		http.Error(w, "cannot encode health", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(append(body, '\n'))
}

// callerCtxKey carries the caller found by authenticate to verify.
type callerCtxKey struct{}

// authenticate applies SPEC §8's rule. The go-sdk's RequireBearerToken is
// the only way to place a TokenInfo where the streamable handler reads it,
// but it refuses a request without a token (we want nobody) and writes no
// WWW-Authenticate header unless it has resource metadata or scopes to
// advertise. So the token is checked here first, the 401 written here, and
// only a known token goes on through RequireBearerToken, whose verifier
// reads back the caller found here.
func (s *Server) authenticate(next http.Handler) http.Handler {
	bearer := auth.RequireBearerToken(s.verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.opts.Tokens == nil || len(r.Header.Values("Authorization")) == 0 {
			next.ServeHTTP(w, r)
			return
		}
		caller, ok := s.lookup(r)
		if !ok {
			s.log.Info("http: refused an unknown bearer token", slog.String("remote", r.RemoteAddr))
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			http.Error(w, "invalid bearer token", http.StatusUnauthorized)
			return
		}
		bearer.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerCtxKey{}, caller)))
	})
}

// lookup reads the one bearer token of r and finds its caller.
func (s *Server) lookup(r *http.Request) (*engine.Caller, bool) {
	vals := r.Header.Values("Authorization")
	if len(vals) != 1 {
		return nil, false
	}
	scheme, token, ok := strings.Cut(strings.TrimSpace(vals[0]), " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" || strings.ContainsAny(token, " \t") {
		return nil, false
	}
	return s.opts.Tokens.Lookup(token)
}

func (s *Server) verify(ctx context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
	c, _ := r.Context().Value(callerCtxKey{}).(*engine.Caller)
	if c == nil {
		return nil, auth.ErrInvalidToken // not reached: authenticate found it
	}
	return &auth.TokenInfo{UserID: c.Subject, Extra: map[string]any{CallerKey: c}}, nil
}

// CallerFromRequest is the mcpadapter.CallerFunc of a Server: the caller
// of the bearer token the request came with, nil (nobody) without one.
// It returns a copy the adapter may keep.
func CallerFromRequest(_ context.Context, req mcp.Request) *engine.Caller {
	if req == nil {
		return nil
	}
	extra := req.GetExtra()
	if extra == nil || extra.TokenInfo == nil {
		return nil
	}
	c, _ := extra.TokenInfo.Extra[CallerKey].(*engine.Caller)
	if c == nil {
		return nil
	}
	return cloneCaller(c)
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
