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
// token error when the header is not exactly one `Bearer <token68>`.
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
	case !isToken68(token):
		return "", invalid("bearer token is not token68", nil)
	}
	return token, nil
}

// isToken68 reports whether s matches RFC 9110's token68:
// 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=".
func isToken68(s string) bool {
	i := 0
	for i < len(s) && token68Char[s[i]] {
		i++
	}
	if i == 0 {
		return false
	}
	for ; i < len(s); i++ {
		if s[i] != '=' {
			return false
		}
	}
	return true
}

// token68Char marks the characters of token68 before its trailing "="s.
var token68Char = func() (t [256]bool) {
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
	}
	for c := 'A'; c <= 'Z'; c++ {
		t[c] = true
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for _, c := range "-._~+/" {
		t[c] = true
	}
	return t
}()
