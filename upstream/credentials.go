package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"golang.org/x/oauth2"

	"github.com/toolgate/toolgate/identity"
)

// The kinds of Auth (docs/contract.md §17).
const (
	AuthClientCredentials = "client_credentials"
	AuthTokenExchange     = "token_exchange"
)

// Auth is how toolgate authenticates itself to an HTTP upstream with OAuth
// (docs/contract.md §17). Every string may be `${VAR}` or `${file:PATH}`
// (Expand), resolved once when the pool is made.
type Auth struct {
	// Type is AuthClientCredentials (one token for the upstream, RFC 6749
	// §4.4) or AuthTokenExchange (one token per caller, RFC 8693: the
	// caller's verified access token is the subject_token).
	Type string
	// TokenURL is the authorization server's token endpoint.
	TokenURL string
	// ClientID and ClientSecret are toolgate's client at the authorization
	// server (sent with HTTP Basic authentication).
	ClientID     string
	ClientSecret string
	// Scopes are requested (scope); none: the server's default.
	Scopes []string
	// Resource (RFC 8707) and Audience name the upstream to the
	// authorization server; token exchange needs at least one.
	Resource string
	Audience string
}

// ErrCredentials is wrapped by every failure to obtain a credential for an
// upstream request: a token endpoint that refused or could not be reached,
// a caller without a token to exchange. The request was not sent. The
// caller of a tool gets the generic internal error; the error (logged and
// in the audit record's error) says why, never a secret, and holds at most
// the token endpoint's error code and a bounded description.
var ErrCredentials = errors.New("upstream: no credential")

// ErrNoSubjectToken is wrapped (with ErrCredentials) when an upstream
// configured for token exchange is called on behalf of a caller that has
// no verified access token: a caller of the tokens file, over stdio, or
// nobody.
var ErrNoSubjectToken = errors.New("the caller has no access token to exchange (only callers with a JWT of the authorization server have one)")

// MaxExchangedTokens bounds the tokens an upstream configured for token
// exchange keeps: one per caller's access token, the least recently used
// dropped beyond it (it is then exchanged again when that caller returns).
const MaxExchangedTokens = 4096

// renewBefore is how long before a token's expiry it is renewed at most;
// a token that lives less than ten times that is renewed when a tenth of
// its life is left.
const renewBefore = 30 * time.Second

// tokenEndpointTimeout bounds one request to a token endpoint.
const tokenEndpointTimeout = 15 * time.Second

// reservedHeaders are set by the MCP transport itself: headers may not
// replace them.
var reservedHeaders = []string{"Accept", "Content-Type", "Content-Length", "Host", "Connection",
	"Transfer-Encoding", "Mcp-Session-Id", "Mcp-Protocol-Version", "Last-Event-Id"}

// validateCredentials checks the credential settings of c (part of
// Config.validate): headers and auth for HTTP, env and inherit_env for
// stdio.
func (c *Config) validateCredentials() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: upstream %s: "+format, append([]any{ErrConfig, c.Name}, args...)...))
	}
	if len(c.Headers) > 0 && c.URL == "" {
		bad("headers are for an HTTP upstream (url)")
	}
	for _, name := range slices.Sorted(mapKeys(c.Headers)) {
		switch {
		case !validHeaderName(name):
			bad("headers: %q is not a header name", name)
		case slices.ContainsFunc(reservedHeaders, func(r string) bool { return strings.EqualFold(r, name) }):
			bad("headers: %s is set by the MCP transport", name)
		case c.Auth != nil && strings.EqualFold(name, "Authorization"):
			bad("headers: Authorization is set by auth")
		}
	}
	if (len(c.Env) > 0 || c.InheritEnv) && len(c.Command) == 0 {
		bad("env and inherit_env are for a stdio upstream (command)")
	}
	for _, kv := range c.Env {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || !validVarName(name) {
			bad("env: %q is not NAME=VALUE with NAME of letters, digits and _", name)
		}
	}
	if a := c.Auth; a != nil {
		switch {
		case c.URL == "":
			bad("auth is for an HTTP upstream (url)")
		case a.Type != AuthClientCredentials && a.Type != AuthTokenExchange:
			bad("auth.type: want %s or %s, got %q", AuthClientCredentials, AuthTokenExchange, a.Type)
		}
		if u, err := url.Parse(a.TokenURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("auth.token_url: want an http(s) URL")
		}
		if a.ClientID == "" {
			bad("auth.client_id is required")
		}
		if a.Type == AuthTokenExchange {
			if a.Resource == "" && a.Audience == "" {
				bad("auth: token_exchange needs audience or resource (the upstream the token is for)")
			}
			if c.Import {
				bad("import: a token_exchange upstream is reached only on behalf of a caller, and callers may see different tools; name its tools in rows (method upstream:%s/TOOL) instead", c.Name)
			}
		}
	}
	return errors.Join(errs...)
}

func mapKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r > unicode.MaxASCII || r <= ' ' || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r) || r == 0x7f {
			return false
		}
	}
	return true
}

// credentials are an upstream's resolved secrets and token sources: what
// its sessions' HTTP client or child process is made with.
type credentials struct {
	name    string
	headers http.Header // resolved; nil: none
	env     []string    // the stdio child's whole environment; nil for HTTP
	base    http.RoundTripper
	// transport is base for an HTTP upstream (newHTTPTransport): closed
	// idle at Pool.Close; nil otherwise.
	transport *http.Transport
	ep        *endpoint   // an HTTP upstream's url, resolved; nil otherwise
	cc        *tokenCache // client credentials; nil: none
	tx        *exchanger  // token exchange; nil: none
	client    *http.Client
}

// newCredentials resolves c's secrets (Expand: a missing variable or file
// is an error naming it) and builds its token sources. lookup is the
// environment (os.LookupEnv when nil).
func newCredentials(c *Config, lookup func(string) (string, bool)) (*credentials, error) {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	cr := &credentials{name: c.Name, base: http.DefaultTransport}
	if c.URL != "" {
		cr.transport = newHTTPTransport(DefaultMaxCallerSessions + sharedIdleConns)
		cr.base = cr.transport
	}
	var errs []error
	expand := func(key, v string) string {
		out, err := Expand(v, lookup)
		if err != nil {
			errs = append(errs, fmt.Errorf("upstream %s: %s: %w", c.Name, key, err))
		}
		return out
	}
	if c.URL != "" {
		if raw := expand("url", c.URL); len(errs) == 0 {
			ep, err := newEndpoint(c.Name, raw)
			if err != nil {
				errs = append(errs, err)
			}
			cr.ep = ep
		}
	}
	if len(c.Headers) > 0 {
		cr.headers = http.Header{}
		for _, name := range slices.Sorted(mapKeys(c.Headers)) {
			v := expand("headers."+name, c.Headers[name])
			if strings.ContainsAny(v, "\r\n\x00") {
				errs = append(errs, fmt.Errorf("upstream %s: headers.%s: %w: the value holds a line break or NUL", c.Name, name, ErrSecret))
			}
			cr.headers.Set(name, v)
		}
	}
	if len(c.Command) > 0 {
		var extra []string
		for _, kv := range c.Env {
			name, v, _ := strings.Cut(kv, "=")
			extra = append(extra, name+"="+expand("env."+name, v))
		}
		cr.env = childEnv(c.InheritEnv, extra, lookup)
	}
	if a := c.Auth; a != nil {
		r := *a
		r.TokenURL = expand("auth.token_url", a.TokenURL)
		r.ClientID = expand("auth.client_id", a.ClientID)
		r.ClientSecret = expand("auth.client_secret", a.ClientSecret)
		r.Resource = expand("auth.resource", a.Resource)
		r.Audience = expand("auth.audience", a.Audience)
		r.Scopes = nil
		for i, s := range a.Scopes {
			r.Scopes = append(r.Scopes, expand(fmt.Sprintf("auth.scopes[%d]", i), s))
		}
		endpoint := &http.Client{Timeout: tokenEndpointTimeout}
		switch r.Type {
		case AuthClientCredentials:
			cr.cc = newClientCredentials(c.Name, &r, endpoint)
		case AuthTokenExchange:
			cr.tx = newExchanger(c.Name, &r, endpoint)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	switch {
	case cr.headers != nil || cr.cc != nil || cr.tx != nil || cr.ep.hides():
		cr.client = &http.Client{Transport: &credentialTransport{cr: cr}}
	case cr.transport != nil:
		cr.client = &http.Client{Transport: cr.transport}
	}
	return cr, nil
}

// minimalEnv are the variables of toolgate's environment a stdio upstream
// gets without inherit_env.
var minimalEnv = []string{"PATH", "HOME", "LANG", "TZ", "TMPDIR"}

// childEnv is a stdio upstream's environment: PATH, HOME, LANG, TZ and
// TMPDIR of toolgate's (all of it with inherit), then extra (later entries
// win). Never nil: a nil Cmd.Env would inherit everything.
func childEnv(inherit bool, extra []string, lookup func(string) (string, bool)) []string {
	env := []string{}
	if inherit {
		env = append(env, os.Environ()...)
	} else {
		for _, k := range minimalEnv {
			if v, ok := lookup(k); ok {
				env = append(env, k+"="+v)
			}
		}
	}
	return append(env, extra...)
}

// httpClient is the HTTP client of the upstream's sessions: over the
// upstream's own transport (newHTTPTransport); nil (the MCP transport's
// default) for an upstream that is not reached over HTTP. With token
// exchange, each request carries the token of the caller its context
// holds (identity.AccessTokenFrom).
func (cr *credentials) httpClient() *http.Client {
	if cr == nil {
		return nil
	}
	return cr.client
}

// httpClientFor is the HTTP client of a session opened for one caller
// (the seam for per-caller upstream sessions): with token exchange, every
// request of it — the background ones too (a ping, the closing DELETE) —
// carries the token exchanged for caller's access token, whatever the
// request's context holds. Without token exchange it is httpClient().
func (cr *credentials) httpClientFor(caller *identity.AccessToken) *http.Client {
	if cr == nil || cr.tx == nil || caller == nil {
		return cr.httpClient()
	}
	return &http.Client{Transport: &credentialTransport{cr: cr, caller: caller}}
}

// keepIdle sets how many idle connections to an HTTP upstream are kept
// alive: one for each caller session and a few for the shared one.
func (cr *credentials) keepIdle(callerSessions int) {
	if cr.transport != nil {
		cr.transport.MaxIdleConnsPerHost = callerSessions + sharedIdleConns
	}
}

// closeIdle closes the idle connections to an HTTP upstream (Pool.Close).
func (cr *credentials) closeIdle() {
	if cr != nil && cr.transport != nil {
		cr.transport.CloseIdleConnections()
	}
}

// childEnv is the stdio upstream's environment (never nil).
func (cr *credentials) childEnv() []string { return cr.env }

// perCaller reports whether the upstream is reached on behalf of a caller
// only (token exchange): it is not connected at start.
func (cr *credentials) perCaller() bool { return cr != nil && cr.tx != nil }

// CallerContext returns a context for a connection made on behalf of the
// caller of from: ctx with from's access token, if any (the dial of a
// session runs on the pool's context, not the caller's).
func CallerContext(ctx, from context.Context) context.Context {
	if t := identity.AccessTokenFrom(from); t != nil {
		return identity.WithAccessToken(ctx, t)
	}
	return ctx
}

// credentialTransport adds the upstream's url secrets (endpoint.restore),
// headers and bearer token to each request; a 401 answer with a token
// renews the token once and sends the request again.
type credentialTransport struct {
	cr *credentials
	// caller, when set, is the one caller this transport's session serves
	// (httpClientFor); nil: the caller of each request's context.
	caller *identity.AccessToken
}

func (t *credentialTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	src, err := t.source(req.Context())
	if err != nil {
		closeBody(req)
		return nil, err
	}
	resp, tok, err := t.send(req, src, "")
	if err != nil || src == nil || resp.StatusCode != http.StatusUnauthorized {
		return resp, err
	}
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return resp, nil // the body is gone: it cannot be sent again
	}
	// The token may have been revoked or expired early: renew it once.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	src.invalidate(tok)
	r2 := req
	if req.GetBody != nil {
		body, err := req.GetBody()
		if err != nil {
			return nil, fmt.Errorf("upstream %s: resend after 401: %w", t.cr.name, err)
		}
		r2 = req.Clone(req.Context())
		r2.Body = body
	}
	resp, _, err = t.send(r2, src, tok)
	return resp, err
}

// source is the token source of a request: nil without auth.
func (t *credentialTransport) source(ctx context.Context) (*tokenCache, error) {
	switch {
	case t.cr.cc != nil:
		return t.cr.cc, nil
	case t.cr.tx != nil && t.caller != nil:
		return t.cr.tx.forCaller(t.caller)
	case t.cr.tx != nil:
		return t.cr.tx.forCaller(identity.AccessTokenFrom(ctx))
	}
	return nil, nil
}

// send sends one copy of req with the headers and a token of src (not
// stale, the one a 401 was answered to).
func (t *credentialTransport) send(req *http.Request, src *tokenCache, stale string) (*http.Response, string, error) {
	r := req.Clone(req.Context())
	t.cr.ep.restore(r)
	for name, vals := range t.cr.headers {
		r.Header[name] = vals
	}
	var tok string
	if src != nil {
		var err error
		if tok, err = src.get(req.Context(), stale); err != nil {
			closeBody(req)
			return nil, "", err
		}
		r.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := t.cr.base.RoundTrip(r)
	if resp != nil {
		resp.Request = req // the request as made, its URL as shown
	}
	return resp, tok, err
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// tokenCache holds one access token from fetch until shortly before it
// expires (renewBefore), or until invalidate. Concurrent callers share
// one fetch.
type tokenCache struct {
	fetch func(ctx context.Context) (*oauth2.Token, error)
	now   func() time.Time

	sem     chan struct{} // a lock a waiting caller can give up on
	mu      sync.Mutex    // guards tok and fetched
	tok     *oauth2.Token
	fetched time.Time
}

func newTokenCache(fetch func(context.Context) (*oauth2.Token, error)) *tokenCache {
	return &tokenCache{fetch: fetch, now: time.Now, sem: make(chan struct{}, 1)}
}

// get returns a token that is not about to expire and is not stale (the
// token an upstream just refused), fetching one when needed.
func (c *tokenCache) get(ctx context.Context, stale string) (string, error) {
	if tok, ok := c.cached(stale); ok {
		return tok, nil
	}
	select {
	case c.sem <- struct{}{}:
	case <-ctx.Done():
		return "", fmt.Errorf("%w: waiting for a token: %w", ErrCredentials, context.Cause(ctx))
	}
	defer func() { <-c.sem }()
	if tok, ok := c.cached(stale); ok {
		return tok, nil // another caller fetched it meanwhile
	}
	start := c.now()
	tok, err := c.fetch(ctx)
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	c.tok, c.fetched = tok, start
	c.mu.Unlock()
	return tok.AccessToken, nil
}

func (c *tokenCache) cached(stale string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tok == nil || c.tok.AccessToken == stale {
		return "", false
	}
	if exp := c.tok.Expiry; !exp.IsZero() {
		margin := min(renewBefore, exp.Sub(c.fetched)/10)
		if !c.now().Before(exp.Add(-margin)) {
			return "", false
		}
	}
	return c.tok.AccessToken, true
}

// invalidate forgets tok if it is the token held (an upstream refused it).
func (c *tokenCache) invalidate(tok string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tok != nil && c.tok.AccessToken == tok {
		c.tok = nil
	}
}

// CredentialProblems returns every problem of c's credential settings
// (headers, env, inherit_env, auth), each a message without the
// "upstream: invalid configuration" prefix, for a config file's
// validation. It resolves no secret and connects to nothing.
func CredentialProblems(c *Config) []string {
	err := c.validateCredentials()
	if err == nil {
		return nil
	}
	var out []string
	for _, e := range unjoin(err) {
		msg := strings.TrimPrefix(e.Error(), ErrConfig.Error()+": ")
		msg = strings.TrimPrefix(msg, "upstream "+c.Name+": ")
		out = append(out, msg)
	}
	return out
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// oauthToken is the token type the token sources hold.
type oauthToken = oauth2.Token
