package httpserve

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/identity"
	"github.com/toolgate/toolgate/toolcall"
)

// principal is who a request is made on behalf of: its caller (nil:
// nobody) and the key of that caller as a session's owner.
type principal struct {
	caller *toolcall.Caller
	// owner is "" for nobody, "token:SUBJECT" for a caller of the tokens
	// file, "jwt:SUBJECT" for a caller of the authorization server: a
	// subject of one source never owns a session of the other's. It is
	// also the TokenInfo's UserID, which the go-sdk binds sessions to.
	owner string
	// expires is when the credential expires: a JWT's exp; zero for a
	// tokens-file token and for nobody.
	expires time.Time
	// source is the identity source that answered ("" for nobody).
	source identity.Source
	// token is a JWT caller's verified access token, for the upstreams
	// that exchange it (docs/contract.md §17); nil for the other sources.
	token *identity.AccessToken
}

// principalKey is the TokenInfo.Extra entry that carries the *principal
// authenticate found to the method handlers (the go-sdk hands them a
// request's TokenInfo, and nothing else of the HTTP request); principalOf
// is its one reader.
const principalKey = "toolgate.principal"

// principalOf is the principal of a request's bearer token; nil: nobody.
func principalOf(req mcp.Request) *principal {
	if req == nil {
		return nil
	}
	extra := req.GetExtra()
	if extra == nil || extra.TokenInfo == nil {
		return nil
	}
	p, _ := extra.TokenInfo.Extra[principalKey].(*principal)
	return p
}

// tokenInfoKey carries the TokenInfo authenticate made of the principal
// it found to verify, which hands it to the SDK (the session gate then
// reads the owner from it, auth.TokenInfoFromContext). A pointer, so that
// the context holds it without another allocation.
type tokenInfoKey struct{}

// authOn reports whether requests are authenticated at all: without a
// tokens file and JWT verification, everyone is nobody and an
// Authorization header is ignored.
func (s *Server) authOn() bool { return s.opts.Tokens != nil || s.opts.JWT != nil }

// identify authenticates r with the chain of docs/contract.md §12: the tokens file,
// then JWT. It reads headers only. An error is answered with refuse.
func (s *Server) identify(r *http.Request) (principal, error) {
	chain := identity.Chain{AllowAnonymous: s.opts.AllowAnonymous}
	if s.opts.Tokens != nil {
		chain.Tokens = s.opts.Tokens
	}
	if s.opts.JWT != nil {
		chain.JWT = s.opts.JWT
	}
	c, src, exp, err := chain.IdentifyUntil(r.Context(), r)
	if err != nil || c == nil {
		return principal{}, err
	}
	p := principal{caller: c, owner: string(src) + ":" + c.Subject, expires: exp, source: src}
	if src == identity.SourceJWT {
		if raw, err := identity.BearerToken(r); err == nil && raw != "" {
			p.token = identity.NewAccessToken(raw, exp)
		}
	}
	return p, nil
}

// refuse answers an authentication error (docs/contract.md §12): 401 with the
// challenge identity.Answer gives, 503 with Retry-After while the issuer's
// keys are not available. The body says no more than the status; the
// reason goes to the log, which never holds the token.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, err error) {
	status, challenge := identity.Answer(err, s.metadataURL)
	if challenge != "" {
		w.Header().Set("WWW-Authenticate", challenge)
	}
	attrs := []any{slog.String("remote", r.RemoteAddr), slog.String("path", r.URL.Path), slog.Int("status", status), slog.Any("error", err)}
	var msg string
	switch {
	case errors.Is(err, identity.ErrNoToken):
		s.log.Debug("http: refused a request without a bearer token", attrs...)
		msg = "a bearer token is required"
	case errors.Is(err, identity.ErrInvalidToken):
		s.log.Info("http: refused a bearer token", attrs...)
		msg = "invalid bearer token"
	case errors.Is(err, identity.ErrUnavailable):
		s.log.Warn("http: cannot check a bearer token: the issuer's signing keys are not available yet", attrs...)
		w.Header().Set("Retry-After", strconv.Itoa(identity.RetryAfterSeconds))
		msg = "the authorization server's keys are not available yet; retry later"
	default:
		s.log.Error("http: authentication failed", attrs...)
		msg = "authentication failed"
	}
	http.Error(w, msg, status)
}

// authenticate applies docs/contract.md §8's and §12's rules before the body is read.
// The go-sdk's RequireBearerToken is the only way to place a TokenInfo
// where the streamable handler reads it, but it refuses a request without
// a token (we may want nobody) and writes no WWW-Authenticate header
// unless it has resource metadata or scopes to advertise. So the token is
// checked here first, the refusal written here, and only a known caller
// goes on through RequireBearerToken, whose verifier reads back the
// principal found here.
//
// A stream opened with an expiring credential (a JWT) ends when it
// expires (docs/contract.md §12): a GET, the standalone stream of a
// session, gets a deadline at the expiry here; a subscriptions/listen
// request gets one from endListenAtExpiry, which reads the TokenInfo's
// Expiration. Other requests run to their end.
func (s *Server) authenticate(next http.Handler) http.Handler {
	// The TokenInfo's Expiration is the token's exp, already checked by
	// the verifier with identity.Leeway: the SDK's own check of it gets
	// the same leeway, so that it refuses nothing the verifier accepted.
	// Its own refusals (a token that expired since it was verified) name
	// the metadata too, as every 401 of docs/contract.md §12 does.
	bearer := auth.RequireBearerToken(s.verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true, ClockSkew: identity.Leeway,
		ResourceMetadataURL: s.metadataURL})(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.authOn() {
			next.ServeHTTP(w, r)
			return
		}
		p, err := s.identify(r)
		if err != nil {
			s.refuse(w, r, err)
			return
		}
		if p.caller == nil {
			next.ServeHTTP(w, r)
			return
		}
		info := &auth.TokenInfo{UserID: p.owner, Expiration: p.expires, Extra: map[string]any{principalKey: &p}}
		ctx := context.WithValue(r.Context(), tokenInfoKey{}, info)
		if r.Method == http.MethodGet && !p.expires.IsZero() {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, p.expires)
			defer cancel()
		}
		bearer.ServeHTTP(w, r.WithContext(ctx))
	})
}

func (s *Server) verify(_ context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
	info, _ := r.Context().Value(tokenInfoKey{}).(*auth.TokenInfo)
	if info == nil {
		return nil, auth.ErrInvalidToken // not reached: authenticate found it
	}
	return info, nil
}

// operator serves next only to a caller with the operator role: 401
// without a valid bearer token, 403 for a caller without the role.
func (s *Server) operator(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var caller *toolcall.Caller
		if s.authOn() {
			p, err := s.identify(r)
			if err != nil && !errors.Is(err, identity.ErrNoToken) {
				s.refuse(w, r, err)
				return
			}
			caller = p.caller
		}
		switch {
		case caller == nil:
			_, challenge := identity.Answer(identity.ErrNoToken, s.metadataURL)
			w.Header().Set("WWW-Authenticate", challenge)
			http.Error(w, "a bearer token with the operator role is required", http.StatusUnauthorized)
		case !slices.Contains(caller.Roles, s.opts.AdminRole):
			http.Error(w, "the operator role is required", http.StatusForbidden)
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// challenging returns w for a handler serving nobody (Approvals, Console,
// Routes) whose own 401 carries a bare "Bearer" challenge (or none): with
// JWT callers, that challenge names the Protected Resource Metadata, as
// every 401 of docs/contract.md §12 does, so a client learns where to get
// a token. Without JWT, w itself.
func (s *Server) challenging(w http.ResponseWriter) http.ResponseWriter {
	if s.metadataURL == "" {
		return w
	}
	_, challenge := identity.Answer(identity.ErrNoToken, s.metadataURL)
	return &challengeWriter{ResponseWriter: w, challenge: challenge}
}

type challengeWriter struct {
	http.ResponseWriter
	challenge string
}

func (c *challengeWriter) WriteHeader(code int) {
	if code == http.StatusUnauthorized {
		if v := c.Header().Get("WWW-Authenticate"); v == "" || v == "Bearer" {
			c.Header().Set("WWW-Authenticate", c.challenge)
		}
	}
	c.ResponseWriter.WriteHeader(code)
}

// Write without WriteHeader is a 200: nothing to rewrite.

func (c *challengeWriter) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (c *challengeWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// withAccessToken puts the verified access token of a request's JWT
// caller into the context its handler runs with (identity.WithAccessToken),
// where an upstream configured for token exchange finds it
// (docs/contract.md §17). Requests of other callers carry none.
func withAccessToken(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if p := principalOf(req); p != nil && p.token != nil {
			ctx = identity.WithAccessToken(ctx, p.token)
		}
		return next(ctx, method, req)
	}
}
