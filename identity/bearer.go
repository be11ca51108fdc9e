package identity

import (
	"net/http"
	"strings"
)

// MaxTokenLen bounds a bearer token. A longer one is refused before any
// work is done on it: an anonymous request costs what it weighs. Access
// tokens with many groups reach a few kilobytes; 16 KiB leaves room.
const MaxTokenLen = 16 << 10

// BearerToken returns the bearer token of r (RFC 6750 §2.1, header only).
// It returns "", nil when r has no Authorization header, and an invalid
// token error when the header is not exactly one `Bearer <token>` (the
// token without spaces, at most MaxTokenLen bytes). The token's characters
// are not checked further here: it is only hashed and compared, or parsed
// as a JWT, which checks its encoding. Scanning it byte by byte cost as
// much as hashing it.
func BearerToken(r *http.Request) (string, error) {
	vals := r.Header.Values("Authorization")
	switch len(vals) {
	case 0:
		return "", nil
	case 1:
	default:
		return "", invalid("more than one Authorization header", nil)
	}
	scheme, token, ok := strings.Cut(strings.TrimSpace(vals[0]), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", invalid("the Authorization header is not a Bearer token", nil)
	}
	token = strings.TrimLeft(token, " ")
	switch {
	case token == "":
		return "", invalid("empty bearer token", nil)
	case len(token) > MaxTokenLen:
		return "", invalid("bearer token longer than 16 KiB", nil)
	case strings.IndexByte(token, ' ') >= 0 || strings.IndexByte(token, '\t') >= 0:
		return "", invalid("bearer token holds a space", nil)
	}
	return token, nil
}
