package identity

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
)

// ErrNoToken is returned by an Authenticator when the request carries no
// bearer token and one is required (an issuer or key set is configured and
// anonymous requests are not allowed). The transport answers HTTP 401 with
// the header NoTokenChallenge builds.
var ErrNoToken = errors.New("identity: no bearer token")

// ErrInvalidToken is what every *InvalidTokenError matches with errors.Is.
var ErrInvalidToken = errors.New("identity: invalid bearer token")

// ErrUnavailable is matched (errors.Is) by the error of a JWT that could not
// be checked because the issuer's keys have not been fetched yet (discovery
// or the key set is unreachable). The token was not judged: the transport
// answers HTTP 503 with a Retry-After header, not 401, so that a client does
// not throw a good token away.
var ErrUnavailable = errors.New("identity: the issuer's signing keys are not available yet")

// InvalidTokenError says why a bearer token was refused. Reason is for the
// log only: the client gets `error="invalid_token"` and nothing else. An
// InvalidTokenError never holds the token or any part of it.
type InvalidTokenError struct {
	// Reason is a short, stable description ("signature does not verify",
	// "token expired", "aud does not hold an accepted audience", ...).
	Reason string
	// Err is the underlying failure, if any (from the JOSE library, the
	// claims decoder); nil otherwise.
	Err error
}

func (e *InvalidTokenError) Error() string {
	if e.Err != nil {
		return "invalid bearer token: " + e.Reason + ": " + e.Err.Error()
	}
	return "invalid bearer token: " + e.Reason
}

// Unwrap returns Err.
func (e *InvalidTokenError) Unwrap() error { return e.Err }

// Is reports true for ErrInvalidToken.
func (e *InvalidTokenError) Is(target error) bool { return target == ErrInvalidToken }

func invalid(reason string, err error) error {
	return &InvalidTokenError{Reason: reason, Err: err}
}

// NoTokenChallenge is the WWW-Authenticate value for a request without a
// token (docs/contract.md §12): `Bearer resource_metadata="<metadataURL>"`.
func NoTokenChallenge(metadataURL string) string {
	return "Bearer resource_metadata=" + quote(metadataURL)
}

// InvalidTokenChallenge is the WWW-Authenticate value for a token that does
// not verify: `Bearer error="invalid_token", resource_metadata="<url>"`.
// With an empty metadataURL (tokens file only) the resource_metadata
// parameter is left out.
func InvalidTokenChallenge(metadataURL string) string {
	if metadataURL == "" {
		return `Bearer error="invalid_token"`
	}
	return `Bearer error="invalid_token", resource_metadata=` + quote(metadataURL)
}

// quote writes s as an RFC 9110 quoted-string.
func quote(s string) string {
	if !strings.ContainsAny(s, `"\`) {
		return `"` + s + `"`
	}
	return strconv.Quote(s) // not reached for a valid URL
}

// RetryAfterSeconds is the Retry-After the transport sends with ErrUnavailable.
const RetryAfterSeconds = 5

// Answer maps an Authenticator's error to the HTTP answer of docs/contract.md §12: the
// status and the WWW-Authenticate value (empty when there is none). The
// body says nothing more than the status: the reason is for the log.
//
//   - ErrNoToken: 401, NoTokenChallenge;
//   - an invalid token: 401, InvalidTokenChallenge;
//   - ErrUnavailable: 503 (the transport adds Retry-After: RetryAfterSeconds);
//   - anything else: 500.
func Answer(err error, metadataURL string) (status int, wwwAuthenticate string) {
	switch {
	case errors.Is(err, ErrNoToken):
		if metadataURL == "" {
			return http.StatusUnauthorized, "Bearer"
		}
		return http.StatusUnauthorized, NoTokenChallenge(metadataURL)
	case errors.Is(err, ErrInvalidToken):
		return http.StatusUnauthorized, InvalidTokenChallenge(metadataURL)
	case errors.Is(err, ErrUnavailable):
		return http.StatusServiceUnavailable, ""
	default:
		return http.StatusInternalServerError, ""
	}
}
