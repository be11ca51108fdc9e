package identity

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
)

const (
	// RefetchInterval is the least time between two fetches of a key set
	// caused by tokens whose kid is unknown (docs/contract.md §12).
	RefetchInterval = 30 * time.Second
	// RetryInterval is the least time between two attempts while no key
	// set has been fetched yet (discovery or the key set unreachable).
	RetryInterval = 5 * time.Second
	// MaxKeySetAge is how long a fetched key set is used before it is
	// fetched again on the next token, so a key the issuer withdrew stops
	// verifying even when no unknown kid comes along.
	MaxKeySetAge = time.Hour
	// KeyCheckInterval is how often a verifier made WithBackground fetches
	// the key set again on its own, whether or not tokens come: a token
	// cached while its key was published is dropped once a check finds
	// the key gone (docs/contract.md §12).
	KeyCheckInterval = 5 * time.Minute
	// fileCheckInterval is how often a JWKS file's modification time is
	// looked at.
	fileCheckInterval = time.Second
	// maxDocument bounds a metadata document or key set read over HTTP.
	maxDocument = 1 << 20
	// fetchTimeout bounds a fetch a token causes (discovery and key set),
	// whatever the HTTP client's own timeout.
	fetchTimeout = 10 * time.Second
)

// minRSABits is the smallest RSA key accepted (NIST SP 800-131A).
const minRSABits = 2048

func init() {
	// A key set's keys are judged one by one (parseKeySet): an RSA key under
	// minRSABits is left out and named, not a reason to refuse the whole
	// set. jwx's own floors would refuse the set at parse; OPA's topdown
	// turns them off the same way at init, so what a key set yields does
	// not depend on whether the program links OPA.
	jwk.Configure(jwk.WithMinRSAPublicExponent(0), jwk.WithMinRSAModulusBits(0))
}

// verifyKey is one usable public key of a key set.
type verifyKey struct {
	kid  string
	key  any // *rsa.PublicKey, *ecdsa.PublicKey, ed25519.PublicKey
	algs []jwa.SignatureAlgorithm
}

// keySet is one fetched key set; immutable.
type keySet struct {
	keys    []verifyKey
	fetched time.Time
	stamp   fileStamp // for a file source
}

type fileStamp struct {
	mod  time.Time
	size int64
}

// candidates returns the keys that may verify a token with this kid and alg.
func (s *keySet) candidates(kid string, alg jwa.SignatureAlgorithm) []verifyKey {
	var out []verifyKey
	for _, k := range s.keys {
		if kid != "" && k.kid != kid {
			continue
		}
		for _, a := range k.algs {
			if a == alg {
				out = append(out, k)
				break
			}
		}
	}
	return out
}

func (s *keySet) hasKid(kid string) bool {
	for _, k := range s.keys {
		if k.kid == kid {
			return true
		}
	}
	return false
}

// holds reports whether s has k: the same kid and the same public key.
func (s *keySet) holds(k verifyKey) bool {
	type equaler interface{ Equal(crypto.PublicKey) bool }
	for _, x := range s.keys {
		if x.kid == k.kid {
			if e, ok := x.key.(equaler); ok && e.Equal(k.key) {
				return true
			}
		}
	}
	return false
}

// parseKeySet reads a JWK Set with jwx, keeping the keys usable for
// signature verification with an accepted algorithm. Symmetric keys, keys
// for encryption, RSA keys under 2048 bits and curves outside the accepted
// algorithms are left out (and named in skipped).
func parseKeySet(data []byte) (ks *keySet, skipped []string, err error) {
	set, err := jwk.Parse(data)
	if err != nil {
		return nil, nil, err
	}
	ks = &keySet{}
	for i := range set.Len() {
		k, _ := set.Key(i)
		kid, _ := k.KeyID()
		name := fmt.Sprintf("key %d (kid %q)", i, kid)
		if use, ok := k.KeyUsage(); ok && use != "sig" {
			skipped = append(skipped, name+": use is not sig")
			continue
		}
		pub, err := jwk.PublicRawKeyOf(k)
		if err != nil {
			skipped = append(skipped, name+": not an asymmetric key")
			continue
		}
		algs := algorithmsFor(pub)
		if want, ok := k.Algorithm(); ok {
			algs = restrict(algs, want.String())
		}
		if len(algs) == 0 {
			skipped = append(skipped, name+": no accepted algorithm for this key")
			continue
		}
		ks.keys = append(ks.keys, verifyKey{kid: kid, key: pub, algs: algs})
	}
	if len(ks.keys) == 0 {
		return nil, skipped, errors.New("the key set holds no key usable for an accepted algorithm")
	}
	return ks, skipped, nil
}

// algorithmsFor returns the accepted algorithms (docs/contract.md §12) a public key
// can verify: none for symmetric keys and anything else.
func algorithmsFor(pub any) []jwa.SignatureAlgorithm {
	switch k := pub.(type) {
	case *rsa.PublicKey:
		if k.N.BitLen() < minRSABits {
			return nil
		}
		return []jwa.SignatureAlgorithm{jwa.RS256(), jwa.RS384(), jwa.RS512(), jwa.PS256(), jwa.PS384(), jwa.PS512()}
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256():
			return []jwa.SignatureAlgorithm{jwa.ES256()}
		case elliptic.P384():
			return []jwa.SignatureAlgorithm{jwa.ES384()}
		}
	case ed25519.PublicKey:
		return []jwa.SignatureAlgorithm{jwa.EdDSA()}
	}
	return nil
}

func restrict(algs []jwa.SignatureAlgorithm, want string) []jwa.SignatureAlgorithm {
	for _, a := range algs {
		if a.String() == want {
			return []jwa.SignatureAlgorithm{a}
		}
	}
	return nil
}

// acceptedAlgorithm maps a token's `alg` to an accepted algorithm; none,
// HMAC and anything else are refused.
func acceptedAlgorithm(alg string) (jwa.SignatureAlgorithm, bool) {
	switch alg {
	case "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA":
		return jwa.LookupSignatureAlgorithm(alg)
	}
	return jwa.SignatureAlgorithm{}, false
}

// keyring holds the current key set and fetches it again when needed:
// on an unknown kid (at most every RefetchInterval), when it is older than
// MaxKeySetAge, and, for a file, when the file changed.
type keyring struct {
	issuer  string
	jwks    string // file or URL; empty: discovery from issuer
	client  *http.Client
	log     *slog.Logger
	now     func() time.Time
	onLoss  func() // a key the previous set had is gone
	current atomic.Pointer[keySet]

	// background: a goroutine fetches the key set (JWT.background); while
	// none is known, a token gets ErrUnavailable at once instead of
	// waiting for a fetch of its own.
	background bool

	// jwksURL is the key set's URL resolved by discovery; set once, under
	// mu, and read without it by source (a request's error names it).
	jwksURL atomic.Pointer[string]

	mu          sync.Mutex // serialises fetches; guards the fields below
	lastAttempt time.Time
	lastCheck   time.Time // file stat
}

func (r *keyring) isFile() bool { return r.jwks != "" && !isURL(r.jwks) }

// keys returns the keys that may verify a token with kid and alg, fetching
// the key set when it must. It returns ErrUnavailable while no key set has
// ever been fetched.
func (r *keyring) keys(ctx context.Context, kid string, alg jwa.SignatureAlgorithm) ([]verifyKey, error) {
	s := r.current.Load()
	now := r.now()
	if s != nil && !r.stale(s, now) {
		if c := s.candidates(kid, alg); len(c) > 0 || kid == "" || s.hasKid(kid) {
			return c, nil
		}
	}
	if s == nil && r.background {
		return nil, fmt.Errorf("%w (%s)", ErrUnavailable, r.source())
	}
	// Unknown kid, stale, or nothing fetched yet.
	r.mu.Lock()
	defer r.mu.Unlock()
	if s2 := r.current.Load(); s2 != s && s2 != nil {
		s = s2 // another request fetched meanwhile
	} else {
		// Not on the request's context: a fetch spends the rate limit, and
		// a client that hangs up must not make it fail (it would keep the
		// issuer's new keys out, 30 s at a time, for everyone).
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), fetchTimeout)
		s = r.refresh(fctx, s, now)
		cancel()
	}
	if s == nil {
		return nil, fmt.Errorf("%w (%s)", ErrUnavailable, r.source())
	}
	return s.candidates(kid, alg), nil
}

// stale reports whether s should be fetched again before use.
func (r *keyring) stale(s *keySet, now time.Time) bool {
	if r.isFile() {
		r.mu.Lock()
		due := now.Sub(r.lastCheck) >= fileCheckInterval
		r.mu.Unlock()
		if !due {
			return false
		}
		st, err := os.Stat(r.jwks)
		r.mu.Lock()
		r.lastCheck = now
		r.mu.Unlock()
		return err == nil && (st.ModTime() != s.stamp.mod || st.Size() != s.stamp.size)
	}
	return now.Sub(s.fetched) >= MaxKeySetAge
}

// refresh fetches the key set if the rate limit allows, installs it, and
// returns the current one. r.mu is held.
func (r *keyring) refresh(ctx context.Context, old *keySet, now time.Time) *keySet {
	interval := RefetchInterval
	switch {
	case old == nil:
		interval = RetryInterval
	case r.isFile():
		interval = 0 // a stat and a local read
	}
	if !r.lastAttempt.IsZero() && now.Sub(r.lastAttempt) < interval {
		return old
	}
	r.lastAttempt = now
	return r.install(ctx, old, now)
}

// check fetches the key set now, whatever the rate limits, and installs
// it: the background's schedule (KeyCheckInterval, RetryInterval).
func (r *keyring) check(ctx context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	r.lastAttempt = now
	fctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	r.install(fctx, r.current.Load(), now)
}

// run is the background of a verifier made WithBackground: it fetches the
// key set at once, then every RetryInterval while none is known, then every
// KeyCheckInterval, until ctx ends. ticks, when set, replaces the timers.
func (r *keyring) run(ctx context.Context, ticks <-chan time.Time) {
	for {
		r.check(ctx)
		next, stop := ticks, func() bool { return false }
		if next == nil {
			d := KeyCheckInterval
			if r.current.Load() == nil {
				d = RetryInterval
			}
			t := time.NewTimer(d)
			next, stop = t.C, t.Stop
		}
		select {
		case <-ctx.Done():
			stop()
			return
		case <-next:
		}
	}
}

// install fetches the key set and makes it current; on failure the old
// one stays. It returns the current set. r.mu is held.
func (r *keyring) install(ctx context.Context, old *keySet, now time.Time) *keySet {
	s, err := r.fetch(ctx)
	if err != nil {
		if old == nil {
			r.log.Error("identity: cannot fetch the issuer's signing keys; JWT callers get 503 until it works (retried at most every 5s)",
				slog.String("source", r.source()), slog.Any("error", err))
		} else {
			r.log.Warn("identity: cannot fetch the signing keys again; keeping the previous set",
				slog.String("source", r.source()), slog.Any("error", err))
		}
		return old
	}
	s.fetched = now
	// Store before onLoss: a token verified with the old set after the
	// cache is cleared is not cached (JWT.verifyHashed compares sets).
	r.current.Store(s)
	changed := old == nil || len(old.keys) != len(s.keys)
	if old != nil {
		for _, k := range old.keys {
			if !s.holds(k) {
				changed = true
				r.log.Info("identity: a signing key left the key set; cached tokens are verified again",
					slog.String("source", r.source()), slog.String("kid", k.kid))
				if r.onLoss != nil {
					r.onLoss()
				}
				break
			}
		}
	}
	if !changed { // the background's check every KeyCheckInterval: no news
		r.log.Debug("identity: signing keys unchanged", slog.String("source", r.source()), slog.Int("keys", len(s.keys)))
		return s
	}
	r.log.Info("identity: signing keys loaded", slog.String("source", r.source()), slog.Int("keys", len(s.keys)))
	return s
}

func (r *keyring) source() string {
	if r.jwks != "" {
		return r.jwks
	}
	if u := r.jwksURL.Load(); u != nil {
		return *u
	}
	return r.issuer + " (discovery)"
}

// fetch reads the key set from its source. r.mu is held.
func (r *keyring) fetch(ctx context.Context) (*keySet, error) {
	var (
		data  []byte
		stamp fileStamp
		err   error
	)
	switch {
	case r.isFile():
		st, err := os.Stat(r.jwks)
		if err != nil {
			return nil, err
		}
		if !st.Mode().IsRegular() || st.Size() > maxDocument {
			return nil, fmt.Errorf("%s: want a regular file of at most 1 MiB", r.jwks)
		}
		stamp = fileStamp{st.ModTime(), st.Size()}
		if data, err = os.ReadFile(r.jwks); err != nil {
			return nil, err
		}
	default:
		u := r.jwks
		if u == "" {
			if r.jwksURL.Load() == nil {
				found, err := r.discover(ctx)
				if err != nil {
					return nil, err
				}
				r.jwksURL.Store(&found)
			}
			u = *r.jwksURL.Load()
		}
		if data, err = r.get(ctx, u); err != nil {
			return nil, err
		}
	}
	s, skipped, err := parseKeySet(data)
	for _, k := range skipped {
		r.log.Warn("identity: a key of the key set is not used", slog.String("source", r.source()), slog.String("key", k))
	}
	if err != nil {
		return nil, err
	}
	s.stamp = stamp
	return s, nil
}

// discover reads the issuer's metadata (OpenID Connect Discovery, else
// RFC 8414) and returns its jwks_uri. The metadata's issuer must be the
// configured issuer exactly.
func (r *keyring) discover(ctx context.Context) (string, error) {
	base := strings.TrimSuffix(r.issuer, "/")
	var errs []error
	for _, u := range metadataURLs(base) {
		data, err := r.get(ctx, u)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var doc struct {
			Issuer  string `json:"issuer"`
			JWKSURI string `json:"jwks_uri"`
		}
		if err := json.Unmarshal(data, &doc); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", u, err))
			continue
		}
		if doc.Issuer != r.issuer {
			return "", fmt.Errorf("%s: issuer is %q, want %q", u, doc.Issuer, r.issuer)
		}
		if doc.JWKSURI == "" {
			return "", fmt.Errorf("%s: no jwks_uri", u)
		}
		if err := checkServerURL(doc.JWKSURI); err != nil {
			return "", fmt.Errorf("%s: jwks_uri %w", u, err)
		}
		return doc.JWKSURI, nil
	}
	return "", fmt.Errorf("discovery: %w", errors.Join(errs...))
}

// metadataURLs are where an issuer's metadata may be, in order: OpenID
// Connect Discovery (path appended), then RFC 8414 (well-known inserted
// before the issuer's path).
func metadataURLs(issuer string) []string {
	out := []string{issuer + "/.well-known/openid-configuration"}
	scheme, rest, _ := strings.Cut(issuer, "://")
	host, path, _ := strings.Cut(rest, "/")
	asm := scheme + "://" + host + "/.well-known/oauth-authorization-server"
	if path != "" {
		asm += "/" + path
	}
	return append(out, asm)
}

func (r *keyring) get(ctx context.Context, u string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxDocument+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", u, err)
	}
	if len(data) > maxDocument {
		return nil, fmt.Errorf("GET %s: larger than 1 MiB", u)
	}
	return data, nil
}
