package identity

import (
	"context"
	"crypto/sha256"
	"net/http"

	"github.com/toolgate/toolgate/engine"
)

// Authenticator tells who an HTTP request is made on behalf of. It returns
// the caller, nil for nobody, or an error the transport maps with Answer:
// ErrNoToken, an *InvalidTokenError (ErrInvalidToken), or ErrUnavailable.
// Implementations are safe for concurrent use.
type Authenticator interface {
	Authenticate(ctx context.Context, r *http.Request) (*engine.Caller, error)
}

// TokenLookup finds the caller a static bearer token stands for, by the
// token's hash (httpserve.Tokens satisfies it). The caller returned is the
// receiver's to keep.
type TokenLookup interface {
	Lookup(token string) (*engine.Caller, bool)
}

// HashLookup is a TokenLookup that also finds a token by its SHA-256, so
// that Chain hashes a token once for the tokens file and the JWT cache. A
// tokens file that offers it must compare digests in constant time, as
// httpserve.Tokens.Lookup does.
type HashLookup interface {
	TokenLookup
	LookupHash(sum [sha256.Size]byte) (*engine.Caller, bool)
}

// Verifier checks a bearer token and returns its caller; *JWT is one.
type Verifier interface {
	Verify(ctx context.Context, token string) (*engine.Caller, error)
}

// Chain is the HTTP caller source of SPEC §12: the tokens file first (by
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

// Authenticate implements Authenticator.
func (c Chain) Authenticate(ctx context.Context, r *http.Request) (*engine.Caller, error) {
	token, err := BearerToken(r)
	if err != nil {
		return nil, err
	}
	if token == "" {
		if c.JWT != nil && !c.AllowAnonymous {
			return nil, ErrNoToken
		}
		return nil, nil
	}
	// Hash once: a JWT is a kilobyte or two, and both the tokens file and
	// the verified-token cache are keyed by its SHA-256.
	var sum [sha256.Size]byte
	hashed := false
	if hl, ok := c.Tokens.(HashLookup); ok {
		sum, hashed = hashToken(token), true
		if caller, ok := hl.LookupHash(sum); ok {
			return caller, nil
		}
	} else if c.Tokens != nil {
		if caller, ok := c.Tokens.Lookup(token); ok {
			return caller, nil
		}
	}
	if v, ok := c.JWT.(*JWT); ok && hashed {
		return v.verifyHashed(ctx, token, sum)
	}
	if c.JWT != nil {
		return c.JWT.Verify(ctx, token)
	}
	return nil, invalid("the tokens file does not list this token", nil)
}

var _ Authenticator = Chain{}
