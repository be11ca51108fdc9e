package gateway_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jwt"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/decisionlog"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/identity"
	"github.com/toolgate/toolgate/internal/cli/configcheck"
	"github.com/toolgate/toolgate/internal/cli/pinreview"
	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/inspect"
	"github.com/toolgate/toolgate/internal/server/gateway"
	"github.com/toolgate/toolgate/internal/testkit/mcptest"
	"github.com/toolgate/toolgate/internal/testkit/oidctest"
	"github.com/toolgate/toolgate/internal/testkit/proctest"
	"github.com/toolgate/toolgate/methods"
	"github.com/toolgate/toolgate/toolcall"
	"github.com/toolgate/toolgate/tracing"
	"github.com/toolgate/toolgate/upstream"
)

// The end-to-end tests of docs/contract.md §17: toolgate in front of
// upstream MCP servers that require bearer tokens, verified against the
// real OpenID provider's keys (internal/testkit/oidctest), which also issues
// toolgate's client-credentials tokens and performs its token exchanges.

// authUpstream is an upstream MCP server that, like a SaaS one, serves
// only requests with a bearer token its verifier accepts (go-sdk's
// auth.RequireBearerToken). Its tool whoami answers the subject, token id
// and expiry of the token the request came with.
type authUpstream struct {
	url     string
	refuse  atomic.Int32 // refuse this many next requests with 401
	refused atomic.Int32
	mu      sync.Mutex
	tokens  []string // every token accepted
}

type whoami struct {
	Sub string    `json:"sub"`
	JTI string    `json:"jti"`
	Exp time.Time `json:"exp"`
}

func startAuthUpstream(t *testing.T, stateless bool, verify func(string) (*auth.TokenInfo, error)) *authUpstream {
	t.Helper()
	u := &authUpstream{}
	srv := mcp.NewServer(&mcp.Implementation{Name: "auth-upstream", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "whoami", Description: "Who the token says the caller is.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			info := req.Extra.TokenInfo
			jti, _ := info.Extra["jti"].(string)
			b, _ := json.Marshal(whoami{Sub: info.UserID, JTI: jti, Exp: info.Expiration})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: stateless})
	v := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		for {
			n := u.refuse.Load()
			if n <= 0 {
				break
			}
			if u.refuse.CompareAndSwap(n, n-1) {
				u.refused.Add(1)
				return nil, auth.ErrInvalidToken
			}
		}
		info, err := verify(token)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", auth.ErrInvalidToken, err)
		}
		u.mu.Lock()
		u.tokens = append(u.tokens, token)
		u.mu.Unlock()
		return info, nil
	}
	ts := httptest.NewServer(auth.RequireBearerToken(v, nil)(h))
	t.Cleanup(ts.Close)
	u.url = ts.URL
	return u
}

func (u *authUpstream) accepted() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.tokens...)
}

// jwtVerifier checks a token against the provider's keys: signature,
// issuer, audience (the upstream's own resource) and lifetime.
func jwtVerifier(t *testing.T, p *oidctest.Provider) func(string) (*auth.TokenInfo, error) {
	set, err := jwk.Fetch(t.Context(), p.Issuer+"/jwks")
	require.NoError(t, err)
	return func(token string) (*auth.TokenInfo, error) {
		tok, err := jwt.Parse([]byte(token), jwt.WithKeySet(set), jwt.WithIssuer(p.Issuer), jwt.WithAudience(p.UpstreamResource))
		if err != nil {
			return nil, err
		}
		sub, _ := tok.Subject()
		jti, _ := tok.JwtID()
		exp, _ := tok.Expiration()
		return &auth.TokenInfo{UserID: sub, Expiration: exp, Extra: map[string]any{"jti": jti}}, nil
	}
}

// spanSink is an OTLP/HTTP endpoint keeping every body it is sent.
func spanSink(t *testing.T) (*httptest.Server, *proctest.Buffer) {
	var got proctest.Buffer
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			if zr, err := gzip.NewReader(r.Body); err == nil {
				body = zr
			}
		}
		_, _ = io.Copy(&got, body)
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(ts.Close)
	return ts, &got
}

const internalError = "Error: An internal error occurred while executing the tool."

func randomSecret(prefix string) string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// TestUpstreamCredentialsE2E: every credential mode end to end against
// the real provider (docs/contract.md §17) — static headers from the
// environment, client credentials, token exchange per caller (alice's
// calls reach the upstream as alice, bob's as bob, concurrently, many
// rounds), renewal after expiry (3 s tokens), a 401 renewed and resent
// once, the failure answers (a caller without a JWT, an exchange the
// provider refuses, an upstream that is down, a configuration naming a
// missing variable) — and then no secret in any output: logs, stderr,
// audit, decision log, spans, /healthz?verbose=1, answers, check's output.
func TestUpstreamCredentialsE2E(t *testing.T) {
	gwSecret := randomSecret("gw-SECRET-")
	staticSecret := randomSecret("static-SECRET-")
	fileSecret := randomSecret("file-SECRET-") // a header from ${file:PATH}
	envSecret := randomSecret("env-SECRET-")   // a stdio upstream's env from ${VAR}
	envFileSecret := randomSecret("envfile-SECRET-")
	t.Setenv("TG_E2E_CLIENT_SECRET", gwSecret)
	t.Setenv("TG_E2E_STATIC", staticSecret)
	t.Setenv("TG_E2E_ENV", envSecret)

	port := oidctest.FreePort(t)
	resource := "http://127.0.0.1:" + strconv.Itoa(port) + "/mcp"
	p := oidctest.StartWith(t, 0, oidctest.StartOptions{Resource: resource, UpstreamTTL: 3 * time.Second, GatewaySecret: gwSecret})
	verify := jwtVerifier(t, p)
	// The token-exchange upstream is stateless: each request is checked on
	// its own. A stateful one binds its session to the user who opened
	// it, which takes an upstream session per caller (txs below).
	txUp := startAuthUpstream(t, true, verify)
	txsUp := startAuthUpstream(t, false, verify)
	ccUp := startAuthUpstream(t, false, verify)
	staticUp := startAuthUpstream(t, false, func(tok string) (*auth.TokenInfo, error) {
		switch tok {
		case staticSecret:
			return &auth.TokenInfo{UserID: "static", Expiration: time.Now().Add(time.Hour)}, nil
		case fileSecret:
			return &auth.TokenInfo{UserID: "filed", Expiration: time.Now().Add(time.Hour)}, nil
		}
		return nil, fmt.Errorf("not the API key")
	})
	down := httptest.NewServer(http.NotFoundHandler())
	downURL := down.URL + "/mcp"
	down.Close()

	dir := t.TempDir()
	// Secrets read from files end with a newline, which is not part of them.
	keyFile, envKeyFile := filepath.Join(dir, "api-key"), filepath.Join(dir, "env-key")
	require.NoError(t, os.WriteFile(keyFile, []byte(fileSecret+"\n"), 0o600))
	require.NoError(t, os.WriteFile(envKeyFile, []byte(envFileSecret+"\n"), 0o600))
	// A stdio upstream whose tool env answers its environment, and whose
	// tool crash ends its process.
	stdioBin := proctest.Build(t, "./internal/testkit/testserver/cmd/upstreamtest")
	reg := filepath.Join(dir, "registry.yaml")
	require.NoError(t, os.WriteFile(reg, []byte(`tools:
  - {name: whoami_tx, method: "upstream:tx/whoami"}
  - {name: whoami_txs, method: "upstream:txs/whoami"}
  - {name: whoami_cc, method: "upstream:cc/whoami"}
  - {name: whoami_static, method: "upstream:static/whoami"}
  - {name: whoami_filed, method: "upstream:filed/whoami"}
  - {name: whoami_down, method: "upstream:down/whoami"}
  - {name: env_stdio, method: "upstream:envd/env"}
  - {name: crash_stdio, method: "upstream:envd/crash"}
  - {name: boom, method: boom}
`), 0o600))
	pol := filepath.Join(dir, "rego")
	require.NoError(t, os.MkdirAll(pol, 0o700))
	ops := &toolcall.Caller{Subject: "ops", Roles: []string{"admin"}}
	carol := &toolcall.Caller{Subject: "carol", Roles: []string{"reader"}}
	auditPath := filepath.Join(dir, "audit.jsonl")
	dlogPath := filepath.Join(dir, "decisions.jsonl")
	otlp, spans := spanSink(t)
	var logs, stderr proctest.Buffer
	ccAuth := &upstream.Auth{Type: upstream.AuthClientCredentials, TokenURL: p.Issuer + "/token", ClientID: "gateway-app",
		ClientSecret: "${TG_E2E_CLIENT_SECRET}", Resource: p.UpstreamResource, Scopes: []string{"tools:call"}}
	txAuth := *ccAuth
	txAuth.Type = upstream.AuthTokenExchange
	serve := config.Serve{Registry: reg, Policy: pol, Tokens: writeTokens(t, dir, ops, carol),
		Auth:  identity.Settings{Issuer: p.Issuer},
		Audit: auditPath, DecisionLog: decisionlog.Settings{Target: dlogPath}, Tracing: tracing.Settings{Endpoint: otlp.URL}, Ledger: "memory",
		Upstreams: []upstream.Settings{
			{Name: "tx", URL: txUp.url, Auth: &txAuth},
			{Name: "txs", URL: txsUp.url, Auth: &txAuth},
			{Name: "cc", URL: ccUp.url, Auth: ccAuth},
			{Name: "static", URL: staticUp.url, Headers: map[string]string{"Authorization": "Bearer ${TG_E2E_STATIC}"}},
			{Name: "filed", URL: staticUp.url, Headers: map[string]string{"Authorization": "Bearer ${file:" + keyFile + "}"}},
			{Name: "down", URL: downURL, Auth: ccAuth},
			{Name: "envd", Command: stdioBin + " -env-tool", Env: map[string]string{"API_KEY": "${TG_E2E_ENV}", "FILE_KEY": "${file:" + envKeyFile + "}"}},
		}}
	// A Go method that panics, formatting the caller's access token into
	// its panic: the recovered panic is logged and audited, and the token
	// prints as redacted.
	boom := methods.Map{}
	boom.Register("boom", func(ctx context.Context, _ struct{}) (string, error) {
		panic(fmt.Sprintf("boom: token %v %+v %#v", identity.AccessTokenFrom(ctx), identity.AccessTokenFrom(ctx), identity.AccessTokenFrom(ctx)))
	})
	g := startIdentity(t, gateway.Config{Serve: serve, Stderr: &stderr, ExtraMethods: boom,
		Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}, port)

	alice := p.Token(t, "alice", resource)
	bob := p.Token(t, "bob", resource)
	nobody := p.Token(t, "nobody", resource)
	var answers []string
	var answersMu sync.Mutex
	call := func(t *testing.T, cs *mcp.ClientSession, tool string) (string, bool) {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
		require.NoError(t, err)
		require.Len(t, res.Content, 1)
		text := res.Content[0].(*mcp.TextContent).Text
		answersMu.Lock()
		answers = append(answers, text)
		answersMu.Unlock()
		return text, res.IsError
	}
	who := func(t *testing.T, cs *mcp.ClientSession, tool string) whoami {
		text, isErr := call(t, cs, tool)
		require.False(t, isErr, "%s: %s", tool, text)
		var w whoami
		require.NoError(t, json.Unmarshal([]byte(text), &w), text)
		return w
	}
	const proto = "2025-11-25"
	as, err := connectToken(t, g.url, proto, alice)
	require.NoError(t, err)
	bs, err := connectToken(t, g.url, proto, bob)
	require.NoError(t, err)

	t.Run("a token-exchange upstream's tools are its registry rows, listed before it is reached", func(t *testing.T) {
		// It is connected on behalf of its first caller, not at start: no
		// call has reached it yet, and its rows are listed as policy grants
		// them, the same for every caller.
		require.Empty(t, txUp.accepted(), "nothing reached the upstream yet")
		for _, cs := range []*mcp.ClientSession{as, bs} {
			names := listNames(t, cs)
			require.Contains(t, names, "whoami_tx")
			require.Contains(t, names, "whoami_txs")
		}
	})

	t.Run("static header from the environment", func(t *testing.T) {
		require.Equal(t, "static", who(t, as, "whoami_static").Sub)
	})

	t.Run("static header from a file", func(t *testing.T) {
		require.Equal(t, "filed", who(t, as, "whoami_filed").Sub, "the file's content, its trailing newline removed")
	})

	t.Run("stdio upstream: its env from the environment and a file, none of toolgate's secrets", func(t *testing.T) {
		// The env tool's answer holds the secrets given to it: the
		// upstream's own output, so it is not among the answers checked
		// below.
		res, err := as.CallTool(t.Context(), &mcp.CallToolParams{Name: "env_stdio", Arguments: map[string]any{}})
		require.NoError(t, err)
		require.False(t, res.IsError)
		env := map[string]string{}
		for line := range strings.SplitSeq(res.Content[0].(*mcp.TextContent).Text, "\n") {
			k, v, _ := strings.Cut(line, "=")
			env[k] = v
		}
		require.Equal(t, envSecret, env["API_KEY"])
		require.Equal(t, envFileSecret, env["FILE_KEY"])
		for k, v := range env {
			require.NotContains(t, k, "TG_E2E", "toolgate's environment stays its own")
			require.NotContains(t, v, gwSecret)
			require.NotContains(t, v, staticSecret)
		}
		// The process ends in the middle of a call: the internal answer,
		// and the failure logged, without the environment it had.
		text, isErr := call(t, as, "crash_stdio")
		require.True(t, isErr)
		require.Equal(t, internalError, text)
	})

	t.Run("a panic is answered with the internal error", func(t *testing.T) {
		text, isErr := call(t, as, "boom")
		require.True(t, isErr)
		require.Equal(t, internalError, text)
		require.Contains(t, logs.String(), "boom: token", "the panic is logged")
	})

	t.Run("client credentials: toolgate's own token, renewed after expiry and on 401", func(t *testing.T) {
		first := who(t, as, "whoami_cc")
		require.Equal(t, "gateway-app", first.Sub, "the client-credentials token's subject is toolgate's client")
		require.Equal(t, first.JTI, who(t, bs, "whoami_cc").JTI, "one token for the upstream, cached, whoever calls")
		// Renewal: past the token's expiry (3 s tokens), a new one is used
		// without any 401 (it is renewed shortly before it expires).
		time.Sleep(time.Until(first.Exp))
		refused := ccUp.refused.Load()
		second := who(t, as, "whoami_cc")
		require.NotEqual(t, first.JTI, second.JTI, "renewed")
		require.Equal(t, refused, ccUp.refused.Load(), "renewed before the upstream had to refuse it")
		// A 401 (a revoked token, say) renews once and resends.
		ccUp.refuse.Store(1)
		third := who(t, as, "whoami_cc")
		require.Equal(t, refused+1, ccUp.refused.Load())
		require.NotEqual(t, second.JTI, third.JTI, "renewed after the 401")
		// Two 401s in a row: the call fails, with the internal answer.
		ccUp.refuse.Store(2)
		text, isErr := call(t, as, "whoami_cc")
		require.True(t, isErr)
		require.Equal(t, internalError, text)
		require.Equal(t, "gateway-app", who(t, as, "whoami_cc").Sub, "and the next call works")
	})

	concurrently := func(t *testing.T, tool string) {
		require.Equal(t, "alice-app", who(t, as, tool).Sub)
		require.Equal(t, "bob-app", who(t, bs, tool).Sub)
		const workers, rounds = 6, 20
		var wg sync.WaitGroup
		errs := make(chan error, workers*rounds)
		for i := range workers {
			cs, want := as, "alice-app"
			if i%2 == 1 {
				cs, want = bs, "bob-app"
			}
			wg.Go(func() {
				for range rounds {
					res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
					if err != nil {
						errs <- err
						continue
					}
					text := res.Content[0].(*mcp.TextContent).Text
					var w whoami
					if res.IsError || json.Unmarshal([]byte(text), &w) != nil || w.Sub != want {
						errs <- fmt.Errorf("%s's call answered %q", want, text)
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
	}
	t.Run("token exchange: each caller as itself, concurrently", func(t *testing.T) {
		concurrently(t, "whoami_tx")
	})
	t.Run("token exchange: each caller as itself, concurrently, stateful upstream", func(t *testing.T) {
		// A stateful upstream binds its MCP session to the user who opened
		// it (the go-sdk answers 403 to another user's token on it): alice
		// and bob each get an upstream session of their own.
		concurrently(t, "whoami_txs")
	})

	t.Run("token exchange: renewed after expiry and on 401", func(t *testing.T) {
		first := who(t, as, "whoami_tx")
		time.Sleep(time.Until(first.Exp))
		second := who(t, as, "whoami_tx")
		require.Equal(t, "alice-app", second.Sub)
		require.NotEqual(t, first.JTI, second.JTI, "exchanged again after expiry")
		txUp.refuse.Store(1)
		third := who(t, as, "whoami_tx")
		require.Equal(t, "alice-app", third.Sub)
		require.NotEqual(t, second.JTI, third.JTI, "exchanged again after the 401")
		require.Equal(t, int32(1), txUp.refused.Load())
	})

	// audit is the last audit record of subject calling tool. The trail's
	// writer runs on its own goroutine and may write a record after the
	// call is answered: the file is read again until the record is there
	// (a minute bounds a failure only).
	audit := func(t *testing.T, subject, tool string) map[string]any {
		t.Helper()
		var last map[string]any
		for deadline := time.Now().Add(time.Minute); last == nil && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			data, err := os.ReadFile(auditPath)
			require.NoError(t, err)
			complete := string(data[:bytes.LastIndexByte(data, '\n')+1]) // a line being written is read next time
			for line := range strings.SplitSeq(strings.TrimSpace(complete), "\n") {
				if line == "" {
					continue
				}
				var rec map[string]any
				require.NoError(t, json.Unmarshal([]byte(line), &rec))
				if rec["subject"] == subject && rec["tool"] == tool {
					last = rec
				}
			}
		}
		require.NotNil(t, last, "an audit record of %s calling %s", subject, tool)
		return last
	}

	t.Run("failures answer the internal error; the audit says why", func(t *testing.T) {
		cs, err := connectToken(t, g.url, proto, tokenFor(carol))
		require.NoError(t, err)
		text, isErr := call(t, cs, "whoami_tx")
		require.True(t, isErr)
		require.Equal(t, internalError, text, "a tokens-file caller has no token to exchange")
		require.Contains(t, audit(t, "carol", "whoami_tx")["error"], "no access token to exchange")
		require.Equal(t, "static", who(t, cs, "whoami_static").Sub, "other upstreams serve carol")

		ns, err := connectToken(t, g.url, proto, nobody)
		require.NoError(t, err)
		text, isErr = call(t, ns, "whoami_tx")
		require.True(t, isErr)
		require.Equal(t, internalError, text, "an exchange the provider refuses")
		require.Contains(t, audit(t, "nobody-app", "whoami_tx")["error"], "token exchange refused by the token endpoint: HTTP 400 invalid_grant")
		require.Equal(t, "alice-app", who(t, as, "whoami_tx").Sub, "another caller's refusal leaves alice's traffic alone")

		text, isErr = call(t, as, "whoami_down")
		require.True(t, isErr)
		require.Equal(t, internalError, text, "an upstream that is down")
	})

	// /healthz?verbose=1 for the operator.
	status, health := mcptest.Get(t, t.Context(), g.base+"/healthz?verbose=1", tokenFor(ops))
	require.Equal(t, http.StatusOK, status, string(health))

	// The console's pages and JSON, as the operator and as alice (a JWT
	// caller without the operator role), the activity tail included.
	var consoleOut strings.Builder
	page := func(token, method, path, body string, want int) {
		t.Helper()
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, _ := http.NewRequestWithContext(t.Context(), method, g.base+path, rd)
		req.Header.Set("Authorization", "Bearer "+token)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, want, resp.StatusCode, "%s %s: %s", method, path, b)
		fmt.Fprintf(&consoleOut, "%s %s\n%s\n", method, path, b)
	}
	opsToken := tokenFor(ops)
	for _, path := range []string{"/console/", "/console/api/config", "/console/api/me", "/console/api/status", "/console/api/callers", "/console/api/approvals"} {
		page(opsToken, http.MethodGet, path, "", http.StatusOK)
	}
	callers := `[{"subject":"alice-app"},{"subject":"ops","roles":["admin"]},{"subject":"carol","roles":["reader"]}]`
	page(opsToken, http.MethodPost, "/console/api/matrix", `{"callers":`+callers+`}`, http.StatusOK)
	for _, tool := range []string{"whoami_tx", "whoami_cc", "whoami_static", "whoami_filed", "env_stdio", "boom"} {
		page(opsToken, http.MethodPost, "/console/api/explain", `{"caller":{"subject":"alice-app"},"tool":"`+tool+`"}`, http.StatusOK)
	}
	page(alice, http.MethodGet, "/console/api/me", "", http.StatusOK)
	page(alice, http.MethodGet, "/console/api/status", "", http.StatusForbidden)
	page(alice, http.MethodGet, "/console/api/approvals", "", http.StatusOK)
	func() {
		// The activity tail's backlog, read up to the last call made
		// (to the upstream that is down), whose event it holds.
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // bounds a failure only
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, g.base+"/console/api/activity", nil)
		req.Header.Set("Authorization", "Bearer "+opsToken)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		var tail strings.Builder
		buf := make([]byte, 4096)
		for !strings.Contains(tail.String(), `"tool":"whoami_down"`) {
			n, err := resp.Body.Read(buf)
			tail.Write(buf[:n])
			require.NoError(t, err, "the activity tail so far: %s", tail.String())
		}
		require.Contains(t, tail.String(), `"tool":"whoami_tx"`)
		require.Contains(t, tail.String(), `"tool":"boom"`)
		fmt.Fprintf(&consoleOut, "GET /console/api/activity\n%s\n", tail.String())
	}()

	// toolgate explain, the binary, with alice's token (verified against
	// the provider) and with a token it refuses.
	bin := proctest.Build(t, "./cmd/toolgate")
	var explainOut strings.Builder
	tokenFile := filepath.Join(dir, "alice.jwt")
	require.NoError(t, os.WriteFile(tokenFile, []byte(alice), 0o600))
	for _, args := range [][]string{
		{"--token", tokenFile, "--issuer", p.Issuer, "--resource", resource, "--tool", "whoami_tx"},
		{"--token", tokenFile, "--issuer", p.Issuer, "--resource", resource, "--tool", "whoami_tx", "--format", "json", "--input"},
		{"--token", tokenFile, "--issuer", p.Issuer, "--resource", "https://elsewhere.example/mcp", "--tool", "whoami_tx"},
	} {
		cmd := exec.CommandContext(t.Context(), bin, append([]string{"explain", "--registry", reg, "--policy", pol}, args...)...)
		out, _ := cmd.CombinedOutput()
		fmt.Fprintf(&explainOut, "%s\n%s\n", strings.Join(args, " "), out)
	}
	require.Contains(t, explainOut.String(), "alice-app", "explain verified alice's token")
	require.NoError(t, g.stop(), "a clean shutdown flushes decision logs and spans")

	// Configurations that cannot start name the variable or file, never a value.
	var startErrs []string
	for _, h := range []map[string]string{{"X-Api-Key": "${TG_E2E_NOT_SET}"}, {"X-Api-Key": "${file:" + filepath.Join(dir, "missing") + "}"}} {
		bad := serve
		bad.Upstreams = []upstream.Settings{{Name: "static", URL: staticUp.url, Headers: h}}
		bad.HTTP, bad.Auth = "127.0.0.1:0", identity.Settings{}
		err := gateway.Run(t.Context(), gateway.Config{Serve: bad, Stderr: &stderr, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
		require.Error(t, err)
		startErrs = append(startErrs, err.Error())
	}
	require.Contains(t, startErrs[0], "environment variable TG_E2E_NOT_SET is not set")
	require.Contains(t, startErrs[1], "file "+filepath.Join(dir, "missing")+": no such file or directory")

	// toolgate check on a config file holding secrets as literals warns,
	// naming the setting, not the value.
	cfgFile := filepath.Join(dir, "serve.yaml")
	require.NoError(t, os.WriteFile(cfgFile, []byte(fmt.Sprintf(`upstreams:
  - name: saas
    url: https://mcp.example.com/mcp
    headers: {Authorization: "Bearer %s", X-Trace: "on", X-Api-Key: "${TG_E2E_STATIC}"}
  - name: cc
    url: https://mcp.example.com/mcp
    auth: {type: client_credentials, token_url: https://idp.example/token, client_id: gw, client_secret: %q}
  - name: local
    command: some-server
    env: {GITHUB_TOKEN: %q, MODE: fast}
`, staticSecret, gwSecret, staticSecret)), 0o600))
	rep := inspect.Check(t.Context(), inspect.CheckOptions{Source: engine.Source{Registry: reg, Policies: pol}, Config: configcheck.File(cfgFile)})
	var checkOut bytes.Buffer
	require.NoError(t, rep.WriteText(&checkOut))
	require.NoError(t, rep.WriteJSON(&checkOut))
	// And the binary's: its output and exit status, in text and JSON.
	for _, format := range []string{"text", "json"} {
		out, _ := exec.CommandContext(t.Context(), bin, "check", "--registry", reg, "--policy", pol, "--config", cfgFile, "--format", format).CombinedOutput()
		require.Contains(t, string(out), "credential_literal", "%s", out)
		checkOut.Write(out)
	}
	var literal []string
	for _, w := range rep.Warnings {
		if w.Code == inspect.CodeCredentialLiteral {
			literal = append(literal, w.Field)
		}
	}
	require.Equal(t, []string{"upstreams[0] (saas).headers.Authorization", "upstreams[1] (cc).auth.client_secret", "upstreams[2] (local).env.GITHUB_TOKEN"}, literal)

	// Secrets nowhere.
	auditData, err := os.ReadFile(auditPath)
	require.NoError(t, err)
	dlogData, err := os.ReadFile(dlogPath)
	require.NoError(t, err)
	require.NotEmpty(t, dlogData)
	outputs := map[string]string{
		"log": logs.String(), "stderr": stderr.String(), "audit": string(auditData), "decision log": string(dlogData),
		"spans": spans.String(), "healthz": string(health), "answers": strings.Join(answers, "\n"),
		"start errors": strings.Join(startErrs, "\n"), "check": checkOut.String(),
		"console": consoleOut.String(), "explain": explainOut.String(),
	}
	require.NotEmpty(t, outputs["spans"], "spans were exported")
	secrets := map[string]string{"client secret": gwSecret, "static header": staticSecret, "header from a file": fileSecret,
		"stdio env": envSecret, "stdio env from a file": envFileSecret, "alice's token": alice, "bob's token": bob, "nobody's token": nobody}
	for i, tok := range append(txUp.accepted(), ccUp.accepted()...) {
		secrets[fmt.Sprintf("upstream token %d", i)] = tok
	}
	require.Greater(t, len(secrets), 8, "tokens were issued")
	for what, secret := range secrets {
		sig := secret
		if i := strings.LastIndexByte(secret, '.'); i > 0 {
			sig = secret[i+1:] // a JWT's signature alone is as telling
		}
		for where, out := range outputs {
			require.NotContains(t, out, secret, "%s in the %s", what, where)
			require.NotContains(t, out, sig, "%s's signature in the %s", what, where)
		}
	}
}

// TestPinsUseServeCredentials: `toolgate pins accept|check` reach an
// upstream with the credentials serve uses (docs/contract.md §15, §17): a
// static header from the environment here; without it the upstream
// refuses and the review fails. The key is in no output.
func TestPinsUseServeCredentials(t *testing.T) {
	secret := randomSecret("pins-SECRET-")
	t.Setenv("TG_PINS_KEY", secret)
	up := startAuthUpstream(t, false, func(tok string) (*auth.TokenInfo, error) {
		if tok != secret {
			return nil, fmt.Errorf("not the API key")
		}
		return &auth.TokenInfo{UserID: "static", Expiration: time.Now().Add(time.Hour)}, nil
	})
	dir := t.TempDir()
	serve := config.Serve{Pins: filepath.Join(dir, "pins.yaml"), Upstreams: []upstream.Settings{{Name: "saas", URL: up.url, Import: true, Pin: true,
		Headers: map[string]string{"Authorization": "Bearer ${TG_PINS_KEY}"}}}}
	var out, logs proctest.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	require.NoError(t, pinreview.Accept(t.Context(), pinreview.Options{Serve: serve, Stdout: &out, Logger: log}, nil, true))
	require.Contains(t, out.String(), "accepted: saas.whoami")
	drift, err := pinreview.Check(t.Context(), pinreview.Options{Serve: serve, Stdout: &out, Logger: log})
	require.NoError(t, err)
	require.False(t, drift)

	t.Setenv("TG_PINS_KEY", "not-the-key")
	_, err = pinreview.Check(t.Context(), pinreview.Options{Serve: serve, Stdout: &out, Logger: log})
	require.Error(t, err, "without the credential the upstream cannot be reviewed")
	for _, s := range []string{out.String(), logs.String(), err.Error()} {
		require.NotContains(t, s, secret)
	}
}
