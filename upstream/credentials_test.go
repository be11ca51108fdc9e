package upstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/identity"
)

const secretValue = "s3cr3t-UPSTREAM-9f1c2e" // distinctive: searched for in every error

func lookupOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// TestExpand: ${VAR} and ${file:PATH} (docs/contract.md §17), and errors
// that name the variable or the file, never a value.
func TestExpand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(file, []byte(secretValue+"\n"), 0o600))
	crlf := filepath.Join(dir, "crlf")
	require.NoError(t, os.WriteFile(crlf, []byte(secretValue+"\r\n"), 0o600))
	twoLines := filepath.Join(dir, "two")
	require.NoError(t, os.WriteFile(twoLines, []byte("a\n\n"), 0o600))
	env := lookupOf(map[string]string{"TOKEN": secretValue, "EMPTY": "", "A_1": "x"})
	for _, tc := range []struct{ in, want, err string }{
		{"plain", "plain", ""},
		{"${TOKEN}", secretValue, ""},
		{"Bearer ${TOKEN}", "Bearer " + secretValue, ""},
		{"${A_1}-${A_1}", "x-x", ""},
		{"${EMPTY}", "", ""},
		{"${file:" + file + "}", secretValue, ""},
		{"${file:" + crlf + "}", secretValue, ""},
		{"${file:" + twoLines + "}", "a\n", ""},
		{"$$", "$", ""},
		{"$${TOKEN}", "${TOKEN}", ""},
		{"a$b$", "a$b$", ""},
		{"${MISSING}", "", "environment variable MISSING is not set"},
		{"${file:" + filepath.Join(dir, "nope") + "}", "", "file " + filepath.Join(dir, "nope") + ": "},
		{"${file:" + dir + "}", "", "file " + dir + ": "},
		{"${file:}", "", "${file:} names no file"},
		{"${TOKEN", "", "an unterminated ${"},
		{"${1X}", "", "${1X}: want ${VAR}"},
		{"${TO KEN}", "", "want ${VAR}"},
	} {
		got, err := Expand(tc.in, env)
		if tc.err == "" {
			require.NoError(t, err, tc.in)
			require.Equal(t, tc.want, got, tc.in)
			continue
		}
		require.ErrorIs(t, err, ErrSecret, tc.in)
		require.Contains(t, err.Error(), tc.err, tc.in)
		require.NotContains(t, err.Error(), secretValue)
	}
}

func FuzzExpand(f *testing.F) {
	for _, s := range []string{"${TOKEN}", "a${file:/nonexistent}b", "$$${", "${", "$", "${TOKEN}${MISSING}"} {
		f.Add(s)
	}
	env := lookupOf(map[string]string{"TOKEN": secretValue})
	f.Fuzz(func(t *testing.T, s string) {
		if strings.Contains(s, "file:") {
			return // the fuzzer must not read the machine's files
		}
		out, err := Expand(s, env)
		if err != nil {
			if strings.Contains(err.Error(), secretValue) && !strings.Contains(s, secretValue) {
				t.Fatalf("error %q shows a value", err)
			}
			return
		}
		if !strings.Contains(s, "$") && out != s {
			t.Fatalf("%q changed without a $: %q", s, out)
		}
	})
}

// TestCredentialConfigRefused: credential settings that cannot work are
// refused by NewPool, each named.
func TestCredentialConfigRefused(t *testing.T) {
	t.Parallel()
	cc := &Auth{Type: AuthClientCredentials, TokenURL: "https://idp.example/token", ClientID: "gw"}
	tx := &Auth{Type: AuthTokenExchange, TokenURL: "https://idp.example/token", ClientID: "gw", Resource: "https://up.example/mcp"}
	for _, tc := range []struct {
		name string
		cfg  Config
		err  string
	}{
		{"headers on stdio", Config{Name: "u", Command: []string{"x"}, Headers: map[string]string{"X-Key": "v"}}, "headers are for an HTTP upstream"},
		{"env on HTTP", Config{Name: "u", URL: "https://up.example/mcp", Env: []string{"A=b"}}, "env and inherit_env are for a stdio upstream"},
		{"bad env", Config{Name: "u", Command: []string{"x"}, Env: []string{"A-B=c"}}, `env: "A-B" is not NAME=VALUE`},
		{"reserved header", Config{Name: "u", URL: "https://up.example/mcp", Headers: map[string]string{"mcp-session-id": "v"}}, "mcp-session-id is set by the MCP transport"},
		{"bad header", Config{Name: "u", URL: "https://up.example/mcp", Headers: map[string]string{"X Key": "v"}}, `"X Key" is not a header name`},
		{"authorization twice", Config{Name: "u", URL: "https://up.example/mcp", Headers: map[string]string{"Authorization": "v"}, Auth: cc}, "Authorization is set by auth"},
		{"auth on stdio", Config{Name: "u", Command: []string{"x"}, Auth: cc}, "auth is for an HTTP upstream"},
		{"auth type", Config{Name: "u", URL: "https://up.example/mcp", Auth: &Auth{Type: "password", TokenURL: "https://idp.example/token", ClientID: "gw"}}, `auth.type: want client_credentials or token_exchange, got "password"`},
		{"token url", Config{Name: "u", URL: "https://up.example/mcp", Auth: &Auth{Type: AuthClientCredentials, TokenURL: "idp/token", ClientID: "gw"}}, "auth.token_url: want an http(s) URL"},
		{"client id", Config{Name: "u", URL: "https://up.example/mcp", Auth: &Auth{Type: AuthClientCredentials, TokenURL: "https://idp.example/token"}}, "auth.client_id is required"},
		{"exchange without target", Config{Name: "u", URL: "https://up.example/mcp", Auth: &Auth{Type: AuthTokenExchange, TokenURL: "https://idp.example/token", ClientID: "gw"}}, "needs audience or resource"},
		{"exchange and import", Config{Name: "u", URL: "https://up.example/mcp", Import: true, Auth: tx}, "import: a token_exchange upstream is reached only on behalf of a caller"},
		{"line break", Config{Name: "u", URL: "https://up.example/mcp", Headers: map[string]string{"X-Key": "${TWO_LINES}"}}, "headers.X-Key: upstream: cannot resolve a secret: the value holds a line break or NUL"},
		{"missing variable", Config{Name: "u", URL: "https://up.example/mcp", Headers: map[string]string{"X-Key": "${NOT_SET_ANYWHERE}"}}, "upstream u: headers.X-Key: upstream: cannot resolve a secret: environment variable NOT_SET_ANYWHERE is not set"},
		{"missing file", Config{Name: "u", URL: "https://up.example/mcp", Auth: &Auth{Type: AuthClientCredentials, TokenURL: "https://idp.example/token", ClientID: "gw", ClientSecret: "${file:/nonexistent/secret}"}}, "upstream u: auth.client_secret: upstream: cannot resolve a secret: file /nonexistent/secret: no such file or directory"},
	} {
		_, err := NewPool([]Config{tc.cfg}, &Options{LookupEnv: lookupOf(map[string]string{"TWO_LINES": secretValue + "\nX-Evil: 1"})})
		require.Error(t, err, tc.name)
		require.Contains(t, err.Error(), tc.err, tc.name)
		require.NotContains(t, err.Error(), secretValue, tc.name)
	}
}

// TestStdioEnvironment: a stdio upstream gets PATH, HOME, LANG, TZ, TMPDIR
// and its env, not the rest of toolgate's environment (where secrets
// live), unless inherit_env (docs/contract.md §17).
func TestStdioEnvironment(t *testing.T) {
	t.Setenv("TOOLGATE_TEST_HELD_SECRET", secretValue) // toolgate's own secret
	t.Setenv("TOOLGATE_TEST_GIVEN", "given-"+secretValue)
	t.Setenv("LANG", "C.UTF-8")
	t.Setenv("TZ", "UTC")
	envOf := func(t *testing.T, cfg Config) map[string]string {
		cfg.Command = []string{upstreamBin, "-env-tool"}
		p := newPool(t, cfg)
		res, err := call(t.Context(), t, p, "upstream:"+cfg.Name+"/env", nil)
		require.NoError(t, err)
		out := map[string]string{}
		for line := range strings.SplitSeq(textOf(t, res), "\n") {
			k, v, _ := strings.Cut(line, "=")
			out[k] = v
		}
		return out
	}
	t.Run("minimal", func(t *testing.T) {
		env := envOf(t, Config{Name: "min", Timeout: 5 * time.Second, Env: []string{"API_KEY=${TOOLGATE_TEST_GIVEN}", "PLAIN=x"}})
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range env {
				if !yield(k) {
					return
				}
			}
		})
		for _, k := range keys {
			require.Contains(t, []string{"PATH", "HOME", "LANG", "TZ", "TMPDIR", "API_KEY", "PLAIN"}, k, "only the minimal environment and env")
		}
		require.Equal(t, "given-"+secretValue, env["API_KEY"], "env: ${VAR} resolved")
		require.Equal(t, "x", env["PLAIN"])
		require.Equal(t, os.Getenv("PATH"), env["PATH"])
		require.Equal(t, "C.UTF-8", env["LANG"])
		require.NotContains(t, env, "TOOLGATE_TEST_HELD_SECRET")
	})
	t.Run("no env at all", func(t *testing.T) {
		env := envOf(t, Config{Name: "none", Timeout: 5 * time.Second})
		require.NotContains(t, env, "TOOLGATE_TEST_HELD_SECRET", "an upstream without env gets no secret either")
		require.Equal(t, "UTC", env["TZ"])
	})
	t.Run("inherit_env", func(t *testing.T) {
		env := envOf(t, Config{Name: "all", Timeout: 5 * time.Second, InheritEnv: true, Env: []string{"TZ=Europe/Paris"}})
		require.Equal(t, secretValue, env["TOOLGATE_TEST_HELD_SECRET"], "inherit_env: everything")
		require.Equal(t, "Europe/Paris", env["TZ"], "env wins over the inherited value")
	})
}

// tokenEndpoint is a token endpoint for one function's tests (the real
// provider is in the gateway's end-to-end tests): it answers what answer
// says and counts the requests.
func tokenEndpoint(t *testing.T, answer func(w http.ResponseWriter, r *http.Request)) (*httptest.Server, *atomic.Int32) {
	var n atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		answer(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts, &n
}

// TestExchangeTokenRequest: the one form POST of RFC 8693 and what is
// made of each kind of answer; no failure holds the subject token, the
// client secret, or the endpoint's raw answer.
func TestExchangeTokenRequest(t *testing.T) {
	t.Parallel()
	const subject = "subject-TOKEN-" + secretValue
	var got http.Request
	var form map[string][]string
	ok := func(w http.ResponseWriter, r *http.Request) {
		got = *r
		require.NoError(t, r.ParseForm())
		form = r.PostForm
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"access_token":"exchanged","issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"Bearer","expires_in":120}`)
	}
	ts, _ := tokenEndpoint(t, ok)
	a := &Auth{Type: AuthTokenExchange, TokenURL: ts.URL, ClientID: "gw app", ClientSecret: secretValue, Resource: "https://up.example/mcp", Audience: "up", Scopes: []string{"a", "b"}}
	tok, err := ExchangeToken(t.Context(), ts.Client(), "up", a, subject)
	require.NoError(t, err)
	require.Equal(t, "exchanged", tok.AccessToken)
	require.WithinDuration(t, time.Now().Add(120*time.Second), tok.Expiry, 10*time.Second)
	user, pass, _ := got.BasicAuth()
	require.Equal(t, "gw+app", user, "RFC 6749 §2.3.1: form-encoded in Basic")
	require.Equal(t, secretValue, pass)
	require.Equal(t, map[string][]string{
		"grant_type": {"urn:ietf:params:oauth:grant-type:token-exchange"}, "subject_token": {subject},
		"subject_token_type":   {"urn:ietf:params:oauth:token-type:access_token"},
		"requested_token_type": {"urn:ietf:params:oauth:token-type:access_token"},
		"resource":             {"https://up.example/mcp"}, "audience": {"up"}, "scope": {"a b"},
	}, form)

	for _, tc := range []struct {
		name   string
		status int
		body   string
		err    string
	}{
		{"refused", 400, `{"error":"invalid_grant","error_description":"subject ` + subject + ` not allowed` + strings.Repeat("x", 300) + `"}`, "token exchange refused by the token endpoint: HTTP 400 invalid_grant: subject [redacted] not allowed"},
		{"refused, not JSON", 500, `<html>` + subject + `</html>`, "HTTP 500"},
		{"not JSON", 200, `<html>` + subject + `</html>`, "HTTP 200 with an answer that is not JSON"},
		{"no token", 200, `{"token_type":"Bearer"}`, "without an access_token"},
		{"not bearer", 200, `{"access_token":"x","token_type":"DPoP"}`, `token_type "DPoP", want Bearer`},
		{"not an access token", 200, `{"access_token":"x","token_type":"Bearer","issued_token_type":"urn:ietf:params:oauth:token-type:id_token"}`, "want an access token"},
		{"bad expiry", 200, `{"access_token":"x","token_type":"Bearer","expires_in":-1}`, "expires_in is not a whole number"},
		{"huge", 200, `{"access_token":"` + strings.Repeat("x", 1<<20) + `"}`, "an answer over 1 MiB"},
	} {
		ts, _ := tokenEndpoint(t, func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(tc.status)
			fmt.Fprint(w, tc.body)
		})
		a := *a
		a.TokenURL = ts.URL
		_, err := ExchangeToken(t.Context(), ts.Client(), "up", &a, subject)
		require.ErrorIs(t, err, ErrCredentials, tc.name)
		require.Contains(t, err.Error(), tc.err, tc.name)
		require.NotContains(t, err.Error(), secretValue, tc.name+": the secret, or the subject token, in the error")
		require.Less(t, len(err.Error()), 400, tc.name+": bounded")
	}
}

// TestTokenCacheRenewal: a token is reused until shortly before it
// expires, and one an upstream refused is renewed; concurrent callers
// share a fetch.
func TestTokenCacheRenewal(t *testing.T) {
	t.Parallel()
	now := time.Now()
	var fetches atomic.Int32
	c := newTokenCache(func(context.Context) (*oauthToken, error) {
		n := fetches.Add(1)
		return &oauthToken{AccessToken: fmt.Sprint("t", n), Expiry: now.Add(100 * time.Second)}, nil
	})
	clock := now
	c.now = func() time.Time { return clock }
	get := func() string {
		tok, err := c.get(t.Context(), "")
		require.NoError(t, err)
		return tok
	}
	require.Equal(t, "t1", get())
	clock = now.Add(89 * time.Second)
	require.Equal(t, "t1", get(), "cached while more than a tenth of its life is left")
	clock = now.Add(91 * time.Second)
	require.Equal(t, "t2", get(), "renewed shortly before expiry")
	c.invalidate("t1")
	require.Equal(t, "t2", get(), "invalidating an older token changes nothing")
	c.invalidate("t2")
	require.Equal(t, "t3", get(), "an upstream refused t2: renewed")
	tok, err := c.get(t.Context(), "t3")
	require.NoError(t, err)
	require.Equal(t, "t4", tok, "never the stale token")

	failing := newTokenCache(func(context.Context) (*oauthToken, error) { return nil, errors.New("down") })
	_, err = failing.get(t.Context(), "")
	require.Error(t, err)
}

// TestRetryOn401: an upstream's 401 renews the token once and resends the
// request, body included; a second 401 is the answer.
func TestRetryOn401(t *testing.T) {
	t.Parallel()
	var fetches atomic.Int32
	cache := newTokenCache(func(context.Context) (*oauthToken, error) {
		return &oauthToken{AccessToken: fmt.Sprint("tok", fetches.Add(1))}, nil
	})
	var refuse atomic.Int32
	var bodies []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b bytes.Buffer
		_, _ = b.ReadFrom(r.Body)
		bodies = append(bodies, r.Header.Get("Authorization")+" "+b.String()+" "+r.Header.Get("X-Static"))
		if refuse.Add(-1) >= 0 {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		fmt.Fprint(w, "ok")
	}))
	t.Cleanup(up.Close)
	cr := &credentials{name: "up", base: http.DefaultTransport, cc: cache, headers: http.Header{"X-Static": {"s"}}}
	client := &http.Client{Transport: &credentialTransport{cr: cr}}

	refuse.Store(1)
	resp, err := client.Post(up.URL, "application/json", strings.NewReader(`{"a":1}`))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, []string{`Bearer tok1 {"a":1} s`, `Bearer tok2 {"a":1} s`}, bodies, "renewed once, the body sent again")

	bodies = nil
	refuse.Store(2)
	resp, err = client.Post(up.URL, "application/json", strings.NewReader(`{"b":2}`))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "retried once only")
	require.Equal(t, []string{`Bearer tok2 {"b":2} s`, `Bearer tok3 {"b":2} s`}, bodies)
}

// TestAccessTokenFromContext: token exchange without a caller's token is
// an ErrNoSubjectToken failure before anything is sent.
func TestAccessTokenFromContext(t *testing.T) {
	t.Parallel()
	x := newExchanger("up", &Auth{TokenURL: "http://127.0.0.1:1/token"}, http.DefaultClient)
	_, err := x.forCaller(identity.AccessTokenFrom(context.Background()))
	require.ErrorIs(t, err, ErrNoSubjectToken)
	require.ErrorIs(t, err, ErrCredentials)
	a, err := x.forCaller(identity.NewAccessToken("alice-token", time.Time{}))
	require.NoError(t, err)
	b, err := x.forCaller(identity.NewAccessToken("bob-token", time.Time{}))
	require.NoError(t, err)
	a2, err := x.forCaller(identity.NewAccessToken("alice-token", time.Time{}))
	require.NoError(t, err)
	require.NotSame(t, a, b, "one token per caller")
	require.Same(t, a, a2)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// FuzzExchangeTokenAnswer: whatever a token endpoint answers, the exchange
// either yields a token or fails with an error that holds neither the
// subject token nor the client secret, and is bounded.
func FuzzExchangeTokenAnswer(f *testing.F) {
	const subject = "SUBJ-" + secretValue
	f.Add(200, `{"access_token":"x","token_type":"Bearer","expires_in":60}`)
	f.Add(400, `{"error":"invalid_grant","error_description":"SUBJ-`+secretValue+`"}`)
	f.Add(200, `{"access_token":"x","token_type":"bearer","expires_in":"60"}`)
	f.Add(500, "\x00\xff")
	a := &Auth{Type: AuthTokenExchange, TokenURL: "http://idp.invalid/token", ClientID: "gw", ClientSecret: secretValue, Audience: "up"}
	f.Fuzz(func(t *testing.T, status int, body string) {
		if status < 100 || status > 599 {
			status = 200
		}
		client := &http.Client{Transport: roundTripFunc(func(*http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(body))}, nil
		})}
		tok, err := ExchangeToken(context.Background(), client, "up", a, subject)
		if err != nil {
			if !errors.Is(err, ErrCredentials) {
				t.Fatalf("%v does not wrap ErrCredentials", err)
			}
			if strings.Contains(err.Error(), secretValue) {
				t.Fatalf("error %q holds a secret", err)
			}
			if len(err.Error()) > 600 {
				t.Fatalf("error of %d bytes", len(err.Error()))
			}
			return
		}
		if tok.AccessToken == "" || status != http.StatusOK {
			t.Fatalf("a token %q from HTTP %d", tok.AccessToken, status)
		}
	})
}

// TestHTTPClientForOneCaller: the client of a session opened for one
// caller sends that caller's exchanged token on every request, whatever
// the request's context carries (the seam for per-caller sessions).
func TestHTTPClientForOneCaller(t *testing.T) {
	t.Parallel()
	var seen []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.Header.Get("Authorization"))
	}))
	t.Cleanup(up.Close)
	idp, _ := tokenEndpoint(t, func(w http.ResponseWriter, r *http.Request) {
		require.NoError(t, r.ParseForm())
		fmt.Fprintf(w, `{"access_token":"for-%s","token_type":"Bearer","expires_in":60}`, r.PostForm.Get("subject_token"))
	})
	cr, err := newCredentials(&Config{Name: "up", URL: up.URL, Auth: &Auth{Type: AuthTokenExchange, TokenURL: idp.URL, ClientID: "gw", Audience: "up"}}, lookupOf(nil))
	require.NoError(t, err)
	alice := cr.httpClientFor(identity.NewAccessToken("alice", time.Time{}))
	for _, ctx := range []context.Context{context.Background(), identity.WithAccessToken(context.Background(), identity.NewAccessToken("bob", time.Time{}))} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, up.URL, nil)
		resp, err := alice.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
	}
	require.Equal(t, []string{"Bearer for-alice", "Bearer for-alice"}, seen)

	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, up.URL, nil)
	_, err = cr.httpClient().Do(req)
	require.ErrorIs(t, err, ErrNoSubjectToken, "the shared client without a caller in the context")
}
