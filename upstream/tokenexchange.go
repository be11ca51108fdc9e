package upstream

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/toolgate/toolgate/identity"
	"github.com/toolgate/toolgate/internal/lru"
)

// RFC 8693's names.
const (
	grantTokenExchange     = "urn:ietf:params:oauth:grant-type:token-exchange"
	tokenTypeAccessToken   = "urn:ietf:params:oauth:token-type:access_token"
	maxTokenEndpointAnswer = 1 << 20
	maxErrorDescription    = 200
)

// newClientCredentials is the token source of an upstream with auth type
// client_credentials: golang.org/x/oauth2/clientcredentials, with the
// RFC 8707 resource and the audience as endpoint parameters.
func newClientCredentials(upstream string, a *Auth, endpoint *http.Client) *tokenCache {
	params := url.Values{}
	if a.Resource != "" {
		params.Set("resource", a.Resource)
	}
	if a.Audience != "" {
		params.Set("audience", a.Audience)
	}
	cfg := &clientcredentials.Config{
		ClientID: a.ClientID, ClientSecret: a.ClientSecret, TokenURL: a.TokenURL,
		Scopes: a.Scopes, EndpointParams: params, AuthStyle: oauth2.AuthStyleInHeader,
	}
	return newTokenCache(func(ctx context.Context) (*oauth2.Token, error) {
		ctx = context.WithValue(ctx, oauth2.HTTPClient, endpoint)
		tok, err := cfg.Token(ctx)
		if err != nil {
			return nil, tokenError(upstream, "client credentials", err, sentForms(a.ClientSecret)...)
		}
		return tok, nil
	})
}

// tokenError makes a token endpoint's failure safe to log: the endpoint's
// error code and a bounded description, never its raw answer (oauth2's
// RetrieveError prints the body, which is not ours to trust).
func tokenError(upstream, what string, err error, secrets ...string) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		status := 0
		if re.Response != nil {
			status = re.Response.StatusCode
		}
		return &TokenError{Upstream: upstream, Grant: what, Status: status,
			Code: clean(redact(re.ErrorCode, secrets...), 64), Description: clean(redact(re.ErrorDescription, secrets...), maxErrorDescription)}
	}
	return fmt.Errorf("%w: upstream %s: %s: %w", ErrCredentials, upstream, what, err)
}

// TokenError is a token endpoint's refusal: its HTTP status, its error
// code and (bounded, printable) description, and nothing else of its
// answer. It wraps ErrCredentials.
type TokenError struct {
	Upstream    string
	Grant       string // "client credentials" or "token exchange"
	Status      int
	Code        string
	Description string
}

func (e *TokenError) Error() string {
	s := fmt.Sprintf("upstream %s: %s refused by the token endpoint: HTTP %d", e.Upstream, e.Grant, e.Status)
	if e.Code != "" {
		s += " " + e.Code
	}
	if e.Description != "" {
		s += ": " + e.Description
	}
	return s
}

func (e *TokenError) Unwrap() error { return ErrCredentials }

// redact replaces every secret in s (a token endpoint may echo what it
// was sent) before it is bounded.
func redact(s string, secrets ...string) string {
	for _, x := range secrets {
		if len(x) >= 4 {
			s = strings.ReplaceAll(s, x, "[redacted]")
		}
	}
	return s
}

// sentForms are the forms in which a token request carries the client's
// secret and the other secrets (a subject token): as they are,
// form-encoded (the body, and each half of the Basic credentials, RFC 6749
// §2.3.1), and in base64 (the Basic header's value) — of base64, the run of
// characters the secret alone decides at each of the three alignments in
// the standard and URL alphabets, which every base64 of a text holding the
// secret contains, whatever surrounds it. Longest first, so that a form
// is redacted before a part of it.
func sentForms(clientSecret string, others ...string) []string {
	var out []string
	for _, x := range append([]string{clientSecret}, others...) {
		if len(x) < 4 {
			continue
		}
		for _, v := range []string{x, url.QueryEscape(x), url.PathEscape(x)} {
			out = append(out, v)
			out = append(out, base64Runs(v)...)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return slices.Compact(out)
}

// base64Runs are the runs of base64 characters that x alone decides, at
// each alignment, in the standard and URL alphabets (at least 6 long).
func base64Runs(x string) []string {
	var out []string
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		enc = enc.WithPadding(base64.NoPadding)
		for off := range 3 {
			e := enc.EncodeToString([]byte(strings.Repeat("\x00", off) + x))
			from, to := (8*off+5)/6, 8*(off+len(x))/6 // characters free of the padding's bits; complete ones
			if to-from >= 6 {
				out = append(out, e[from:to])
			}
		}
	}
	return out
}

// clean keeps s printable and at most n bytes long.
func clean(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}

// exchanger holds the tokens of an upstream with auth type token_exchange:
// one per caller's access token (keyed by its SHA-256), at most
// MaxExchangedTokens, least recently used dropped.
type exchanger struct {
	upstream string
	auth     *Auth
	endpoint *http.Client
	tokens   *lru.Cache[*tokenCache]
	now      func() time.Time
}

func newExchanger(upstream string, a *Auth, endpoint *http.Client) *exchanger {
	return &exchanger{upstream: upstream, auth: a, endpoint: endpoint, tokens: lru.New[*tokenCache](MaxExchangedTokens), now: time.Now}
}

// forCaller is the token source of the caller whose access token is sub:
// an error wrapping ErrCredentials and ErrNoSubjectToken without one.
func (x *exchanger) forCaller(sub *identity.AccessToken) (*tokenCache, error) {
	raw := sub.Reveal()
	if raw == "" {
		return nil, fmt.Errorf("%w: upstream %s: token exchange: %w", ErrCredentials, x.upstream, ErrNoSubjectToken)
	}
	key := sha256.Sum256([]byte(raw))
	if c := x.tokens.Get(key[:]); c != nil {
		return c, nil
	}
	c := newTokenCache(func(ctx context.Context) (*oauth2.Token, error) {
		return ExchangeToken(ctx, x.endpoint, x.upstream, x.auth, raw)
	})
	c.now = x.now
	return x.tokens.Put(key[:], c), nil
}

// ExchangeToken exchanges subjectToken, a caller's access token, at
// a.TokenURL for an access token for the upstream (RFC 8693 §2: one form
// POST with grant_type token-exchange, subject_token, subject_token_type
// and requested_token_type access_token, audience, resource and scope as
// configured; the client authenticates with HTTP Basic, RFC 6749 §2.3.1).
// A refusal is a *TokenError; any failure wraps ErrCredentials and holds
// neither token nor secret.
func ExchangeToken(ctx context.Context, client *http.Client, upstream string, a *Auth, subjectToken string) (*oauth2.Token, error) {
	form := url.Values{
		"grant_type":           {grantTokenExchange},
		"subject_token":        {subjectToken},
		"subject_token_type":   {tokenTypeAccessToken},
		"requested_token_type": {tokenTypeAccessToken},
	}
	if a.Audience != "" {
		form.Set("audience", a.Audience)
	}
	if a.Resource != "" {
		form.Set("resource", a.Resource)
	}
	if len(a.Scopes) > 0 {
		form.Set("scope", strings.Join(a.Scopes, " "))
	}
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w: upstream %s: token exchange: "+format, append([]any{ErrCredentials, upstream}, args...)...)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.TokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, fail("%v", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(url.QueryEscape(a.ClientID), url.QueryEscape(a.ClientSecret))
	resp, err := client.Do(req)
	if err != nil {
		return nil, fail("%w", err) // a *url.Error: the token URL and why, no body
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenEndpointAnswer+1))
	if err != nil {
		return nil, fail("reading the answer: %w", err)
	}
	if len(body) > maxTokenEndpointAnswer {
		return nil, fail("HTTP %d: an answer over 1 MiB", resp.StatusCode)
	}
	var ans struct {
		AccessToken     string          `json:"access_token"`
		IssuedTokenType string          `json:"issued_token_type"`
		TokenType       string          `json:"token_type"`
		ExpiresIn       json.RawMessage `json:"expires_in"`
		Error           string          `json:"error"`
		Description     string          `json:"error_description"`
	}
	// What the endpoint sent is printed only bounded, and without anything
	// it echoed of what it was sent.
	secrets := sentForms(a.ClientSecret, subjectToken)
	shown := func(s string, n int) string { return clean(redact(s, secrets...), n) }
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	decodeErr := json.Unmarshal(body, &ans)
	if resp.StatusCode != http.StatusOK {
		return nil, &TokenError{Upstream: upstream, Grant: "token exchange", Status: resp.StatusCode,
			Code: shown(ans.Error, 64), Description: shown(ans.Description, maxErrorDescription)}
	}
	switch {
	case decodeErr != nil:
		return nil, fail("HTTP 200 with an answer that is not JSON (%s)", shown(mt, 64))
	case ans.AccessToken == "":
		return nil, fail("HTTP 200 without an access_token")
	case ans.IssuedTokenType != "" && ans.IssuedTokenType != tokenTypeAccessToken:
		return nil, fail("issued_token_type %s, want an access token", shown(ans.IssuedTokenType, 100))
	case !strings.EqualFold(ans.TokenType, "Bearer"):
		return nil, fail("token_type %q, want Bearer", shown(ans.TokenType, 32))
	}
	tok := &oauth2.Token{AccessToken: ans.AccessToken, TokenType: "Bearer"}
	if len(ans.ExpiresIn) > 0 {
		var secs json.Number
		if err := json.Unmarshal(ans.ExpiresIn, &secs); err != nil {
			var s string // some servers send it as a string
			if json.Unmarshal(ans.ExpiresIn, &s) != nil {
				return nil, fail("expires_in is not a number")
			}
			secs = json.Number(s)
		}
		n, err := secs.Int64()
		if err != nil || n < 0 {
			return nil, fail("expires_in is not a whole number of seconds")
		}
		if n > 0 {
			tok.Expiry = time.Now().Add(time.Duration(min(n, 1<<31)) * time.Second)
		}
	}
	return tok, nil
}
