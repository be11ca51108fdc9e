package identity

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// AccessToken is a caller's verified access token (a JWT of docs/contract.md
// §12), kept only so that an upstream configured for token exchange
// (docs/contract.md §17) can exchange it for a token of its own. It is a
// secret: every way of printing it (fmt's verbs, slog, JSON, text
// marshalling) shows "[access token]", never the token; only Reveal gives
// it, to the one function that sends it to the token endpoint. A nil
// *AccessToken is no token.
type AccessToken struct {
	raw     string
	expires time.Time
}

// NewAccessToken wraps a verified token that expires at exp (zero: unknown).
func NewAccessToken(raw string, exp time.Time) *AccessToken {
	return &AccessToken{raw: raw, expires: exp}
}

// Reveal returns the token itself. Call it only to send the token where it
// is meant to go (the token endpoint of an exchange); never log it.
func (t *AccessToken) Reveal() string {
	if t == nil {
		return ""
	}
	return t.raw
}

// Expires is when the token expires; zero when unknown.
func (t *AccessToken) Expires() time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.expires
}

const redactedToken = "[access token]"

// String implements fmt.Stringer without the token.
func (t *AccessToken) String() string { return redactedToken }

// GoString implements fmt.GoStringer without the token.
func (t *AccessToken) GoString() string { return redactedToken }

// Format prints "[access token]" for every verb, %+v and %#v included.
func (t *AccessToken) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(redactedToken)) }

// LogValue implements slog.LogValuer without the token.
func (t *AccessToken) LogValue() slog.Value { return slog.StringValue(redactedToken) }

// MarshalJSON encodes the redacted string, never the token.
func (t *AccessToken) MarshalJSON() ([]byte, error) { return []byte(`"` + redactedToken + `"`), nil }

// MarshalText encodes the redacted string, never the token.
func (t *AccessToken) MarshalText() ([]byte, error) { return []byte(redactedToken), nil }

type accessTokenKey struct{}

// WithAccessToken returns ctx carrying the caller's verified access token:
// the transport (httpserve) sets it for each request of a JWT caller, and
// an upstream configured for token exchange reads it (AccessTokenFrom).
// It travels in the context only, never in the caller, the policy input,
// the audit record or a log.
func WithAccessToken(ctx context.Context, t *AccessToken) context.Context {
	if t == nil {
		return ctx
	}
	return context.WithValue(ctx, accessTokenKey{}, t)
}

// AccessTokenFrom returns the caller's verified access token carried by
// ctx; nil when there is none (a caller of the tokens file, over stdio, or
// nobody).
func AccessTokenFrom(ctx context.Context) *AccessToken {
	t, _ := ctx.Value(accessTokenKey{}).(*AccessToken)
	return t
}
