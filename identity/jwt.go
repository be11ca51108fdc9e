package identity

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"
	"unsafe"

	"github.com/lestrrat-go/jwx/v3/jws"
	"github.com/lestrrat-go/jwx/v3/jwt"
	"github.com/toolgate/toolgate/toolcall"
)

// Leeway is the clock skew allowed on exp, nbf and iat (docs/contract.md §12).
const Leeway = 60 * time.Second

// JWT verifies JWT access tokens issued by one authorization server and
// maps their claims to callers (docs/contract.md §12). It is safe for concurrent use.
type JWT struct {
	settings Settings
	keys     *keyring
	cache    *tokenCache
	now      func() time.Time
}

// Option configures NewJWT.
type Option func(*options)

type options struct {
	client    *http.Client
	log       *slog.Logger
	now       func() time.Time
	cacheSize int
	// background: WithBackground.
	background bool
	// ticks, when set, replaces the background's timers (tests).
	ticks <-chan time.Time
}

// WithHTTPClient sets the client used for discovery and key sets (default:
// a client with a 10 s timeout).
func WithHTTPClient(c *http.Client) Option { return func(o *options) { o.client = c } }

// WithLogger sets where key fetches and their failures are logged (default:
// slog.Default()). Token failures are not logged here: they are returned.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// WithClock sets the clock for token times, the cache and the fetch rate
// limits (default time.Now); for tests.
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// WithCacheSize bounds the verified-token cache (default DefaultCacheSize;
// 0 or less: no cache).
func WithCacheSize(n int) Option { return func(o *options) { o.cacheSize = n } }

// WithBackground makes NewJWT return at once and fetch the key set in a
// goroutine that lives as long as NewJWT's ctx: at once, then every
// RetryInterval until a fetch works, then every KeyCheckInterval (a token
// cached while its key was published is dropped once its key is gone).
// While no key set is known, a token gets ErrUnavailable at once, without
// waiting for a fetch. A server uses it; a command verifying one token
// does not.
func WithBackground() Option { return func(o *options) { o.background = true } }

// NewJWT returns a verifier for s (after WithDefaults; it must Validate).
// It fetches the key set once (discovery first, from s.Issuer, unless
// s.JWKS is set) and returns the verifier whether or not that worked: when
// the issuer cannot be reached, the failure is logged and returned by
// Ready, tokens get ErrUnavailable, and the fetch is retried at most every
// RetryInterval until it works. ctx bounds that first fetch only; with
// WithBackground, ctx is the background's lifetime and nothing is fetched
// before NewJWT returns.
func NewJWT(ctx context.Context, s Settings, opts ...Option) (*JWT, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if !s.Enabled() {
		return nil, &SettingsError{Problems: []string{"neither auth.issuer nor auth.jwks is set"}}
	}
	s = s.WithDefaults("")
	o := options{cacheSize: DefaultCacheSize}
	for _, opt := range opts {
		opt(&o)
	}
	if o.client == nil {
		o.client = &http.Client{Timeout: 10 * time.Second}
	}
	if o.log == nil {
		o.log = slog.Default()
	}
	if o.now == nil {
		o.now = time.Now
	}
	v := &JWT{settings: s, cache: newTokenCache(o.cacheSize), now: o.now}
	v.keys = &keyring{issuer: s.Issuer, jwks: s.JWKS, client: o.client, log: o.log, now: o.now, onLoss: v.cache.clear, background: o.background}
	if o.background {
		go v.keys.run(ctx, o.ticks)
		return v, nil
	}
	v.keys.mu.Lock()
	v.keys.refresh(ctx, nil, o.now())
	v.keys.mu.Unlock()
	return v, nil
}

// Ready reports whether a key set has been fetched: nil once it has, else
// an error matching ErrUnavailable. It does not fetch.
func (v *JWT) Ready() error {
	if v.keys.current.Load() == nil {
		return ErrUnavailable
	}
	return nil
}

// Settings returns the settings v was made with, defaults filled in.
func (v *JWT) Settings() Settings { return v.settings }

// Authenticate implements Authenticator for JWT callers alone: a request
// without a token gets ErrNoToken. Use Chain to add the tokens file or to
// allow anonymous requests.
func (v *JWT) Authenticate(ctx context.Context, r *http.Request) (*toolcall.Caller, error) {
	return Chain{JWT: v}.Authenticate(ctx, r)
}

// Verify checks token and returns the caller it stands for. The caller is
// shared by every request with the same token (it comes from the cache):
// read it, never modify it. It returns an *InvalidTokenError for a token that does not
// verify, or an error matching ErrUnavailable when no key set could be
// fetched yet. A token verified before is answered from the cache until
// its exp, without checking its signature again.
func (v *JWT) Verify(ctx context.Context, token string) (*toolcall.Caller, error) {
	if len(token) > MaxTokenLen {
		return nil, invalid("bearer token longer than 16 KiB", nil)
	}
	c, _, err := v.verifyHashed(ctx, token, hashToken(token))
	return c, err
}

// verifyHashed is Verify for a token whose SHA-256 is key, also returning
// the token's exp.
func (v *JWT) verifyHashed(ctx context.Context, token string, key [sha256.Size]byte) (*toolcall.Caller, time.Time, error) {
	now := v.now()
	if c, exp, ok := v.cache.lookup(key, now); ok {
		return c, exp, nil
	}
	before := v.keys.current.Load()
	c, exp, err := v.verify(ctx, token, now)
	if err != nil {
		return nil, time.Time{}, err
	}
	// A key set installed meanwhile may have dropped the key that
	// verified, after the cache was cleared: cache only under the set the
	// token was verified with (or the first one).
	if after := v.keys.current.Load(); after == before || before == nil {
		v.cache.put(key, c, exp)
	}
	return c, exp, nil
}

// hashToken returns the SHA-256 of token, the cache's key. It hashes the
// string's bytes in place: sha256.Sum256([]byte(token)) would copy a
// kilobyte-long token to the heap on every request, and so does
// io.WriteString on a hash.Hash. Sum256 only reads its argument.
func hashToken(token string) [sha256.Size]byte {
	return sha256.Sum256(unsafe.Slice(unsafe.StringData(token), len(token)))
}

// header is the part of a JWS protected header read to choose the key.
type header struct {
	Alg string `json:"alg"`
	Kid string `json:"kid"`
}

func (v *JWT) verify(ctx context.Context, token string, now time.Time) (*toolcall.Caller, time.Time, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, time.Time{}, invalid("not a JWT (compact JWS with three parts)", nil)
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil {
		return nil, time.Time{}, invalid("header is not base64url", nil)
	}
	var h header
	if err := json.Unmarshal(raw, &h); err != nil {
		return nil, time.Time{}, invalid("header is not a JSON object", nil)
	}
	alg, ok := acceptedAlgorithm(h.Alg)
	if !ok {
		return nil, time.Time{}, invalid("algorithm "+quote(h.Alg)+" is not accepted (asymmetric only: RS*, PS*, ES256, ES384, EdDSA)", nil)
	}
	keys, err := v.keys.keys(ctx, h.Kid, alg)
	if err != nil {
		return nil, time.Time{}, err
	}
	if len(keys) == 0 {
		return nil, time.Time{}, invalid("no key of the issuer has kid "+quote(h.Kid)+" for "+h.Alg, nil)
	}
	var payload []byte
	for _, k := range keys {
		// VerifyCompactFast checks that alg suits the key and is the
		// header's alg, and refuses crit and b64 headers.
		if payload, err = jws.VerifyCompactFast(k.key, []byte(token), alg); err == nil {
			break
		}
	}
	if err != nil {
		return nil, time.Time{}, invalid("signature does not verify", err)
	}
	// The claims decide the caller; read them exactly before anything else.
	caller, err := CallerFromClaims(payload, v.settings)
	if err != nil {
		return nil, time.Time{}, err
	}
	tok, err := jwt.Parse(payload, jwt.WithVerify(false), jwt.WithValidate(false))
	if err != nil {
		return nil, time.Time{}, invalid("claims do not parse as a JWT claims set", err)
	}
	if err := jwt.Validate(tok,
		jwt.WithClock(jwt.ClockFunc(func() time.Time { return now })),
		jwt.WithAcceptableSkew(Leeway),
		jwt.WithIssuer(v.settings.Issuer),
		jwt.WithRequiredClaim("exp"),
	); err != nil {
		return nil, time.Time{}, invalid(validateReason(err), err)
	}
	aud, _ := tok.Audience()
	if !slices.ContainsFunc(aud, func(a string) bool { return slices.Contains(v.settings.Audiences, a) }) {
		return nil, time.Time{}, invalid("aud holds no accepted audience", nil)
	}
	exp, _ := tok.Expiration()
	return caller, exp, nil
}

func validateReason(err error) string {
	switch {
	case errors.Is(err, jwt.TokenExpiredError()):
		return "token expired"
	case errors.Is(err, jwt.TokenNotYetValidError()):
		return "token not valid yet (nbf)"
	case errors.Is(err, jwt.InvalidIssuedAtError()):
		return "token issued in the future (iat)"
	case errors.Is(err, jwt.InvalidIssuerError()):
		return "iss is not the issuer"
	case errors.Is(err, jwt.MissingRequiredClaimError()):
		return "no exp"
	default:
		return "claims do not validate"
	}
}

var _ Verifier = (*JWT)(nil)
