package identity

import (
	"context"
	"crypto/sha256"
	"net/http"
	"time"

	"github.com/toolgate/toolgate/toolcall"
)

// Authenticator tells who an HTTP request is made on behalf of. It returns
// the caller, nil for nobody, or an error the transport maps with Answer:
// ErrNoToken, an *InvalidTokenError (ErrInvalidToken), or ErrUnavailable.
// Implementations are safe for concurrent use.
type Authenticator interface {
	Authenticate(ctx context.Context, r *http.Request) (*toolcall.Caller, error)
}

// TokenLookup finds the caller a static bearer token stands for, by the
// token's hash (*Tokens satisfies it). The caller returned is the
// receiver's to keep.
type TokenLookup interface {
	Lookup(token string) (*toolcall.Caller, bool)
}

// HashLookup is a TokenLookup that also finds a token by its SHA-256, so
// that Chain hashes a token once for the tokens file and the JWT cache. A
// tokens file that offers it must compare digests in constant time, as
// Tokens.LookupHash does.
type HashLookup interface {
	TokenLookup
	LookupHash(sum [sha256.Size]byte) (*toolcall.Caller, bool)
}

// Verifier checks a bearer token and returns its caller; *JWT is one.
type Verifier interface {
	Verify(ctx context.Context, token string) (*toolcall.Caller, error)
}

// Chain is the HTTP caller source of docs/contract.md §12: the tokens file first (by
// hash), then JWT verification; either may be nil. The zero Chain serves
// everyone as nobody.
//
//   - no Authorization header: ErrNoToken when JWT is set and AllowAnonymous
//     is not, else nobody (nil, nil);
//   - a token the tokens file knows: its caller;
//   - otherwise, with JWT set: what JWT.Verify says;
//   - otherwise: an invalid token.
type Chain struct {
	Tokens TokenLookup
	JWT    Verifier
	// AllowAnonymous serves a request without a token as nobody even when
	// JWT is set (--allow-anonymous).
	AllowAnonymous bool
}

// Source names the caller source that answered for a request: a subject
// of one source is never the same person as the same subject of another
// (the tokens file's "alice" and the issuer's "alice" own different
// sessions).
type Source string

// The sources of a Chain.
const (
	SourceNone   Source = ""      // nobody
	SourceTokens Source = "token" // the tokens file
	SourceJWT    Source = "jwt"   // the JWT verifier
)

// Authenticate implements Authenticator.
func (c Chain) Authenticate(ctx context.Context, r *http.Request) (*toolcall.Caller, error) {
	caller, _, err := c.Identify(ctx, r)
	return caller, err
}

// Identify is Authenticate, also saying which source the caller came from
// (SourceNone for nobody and on error).
func (c Chain) Identify(ctx context.Context, r *http.Request) (*toolcall.Caller, Source, error) {
	caller, src, _, err := c.IdentifyUntil(ctx, r)
	return caller, src, err
}

// IdentifyUntil is Identify, also giving the time the caller's credential
// expires: a JWT's exp when JWT is a *JWT, else the zero time (a
// tokens-file token, or nobody, does not expire). A transport ends what
// outlives a request, such as a notification stream, at that time.
func (c Chain) IdentifyUntil(ctx context.Context, r *http.Request) (*toolcall.Caller, Source, time.Time, error) {
	token, err := BearerToken(r)
	if err != nil {
		return nil, SourceNone, time.Time{}, err
	}
	if token == "" {
		if c.JWT != nil && !c.AllowAnonymous {
			return nil, SourceNone, time.Time{}, ErrNoToken
		}
		return nil, SourceNone, time.Time{}, nil
	}
	// Hash once: a JWT is a kilobyte or two, and both the tokens file and
	// the verified-token cache are keyed by its SHA-256.
	var sum [sha256.Size]byte
	hashed := false
	if hl, ok := c.Tokens.(HashLookup); ok {
		sum, hashed = hashToken(token), true
		if caller, ok := hl.LookupHash(sum); ok {
			return caller, SourceTokens, time.Time{}, nil
		}
	} else if c.Tokens != nil {
		if caller, ok := c.Tokens.Lookup(token); ok {
			return caller, SourceTokens, time.Time{}, nil
		}
	}
	var (
		caller *toolcall.Caller
		exp    time.Time
	)
	switch v, ok := c.JWT.(*JWT); {
	case ok:
		if !hashed { // BearerToken bounded its length
			sum = hashToken(token)
		}
		caller, exp, err = v.verifyHashed(ctx, token, sum)
	case c.JWT != nil:
		caller, err = c.JWT.Verify(ctx, token)
	default:
		return nil, SourceNone, time.Time{}, invalid("the tokens file does not list this token", nil)
	}
	if err != nil || caller == nil {
		return nil, SourceNone, time.Time{}, err
	}
	return caller, SourceJWT, exp, nil
}

var _ Authenticator = Chain{}
