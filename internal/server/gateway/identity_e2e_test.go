package gateway_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/identity"
	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/server/gateway"
	"github.com/toolgate/toolgate/internal/testkit/mcptest"
	"github.com/toolgate/toolgate/internal/testkit/oidctest"
	"github.com/toolgate/toolgate/toolcall"
)

// The end-to-end tests of docs/contract.md §12: toolgate (gateway.Run, the bundled
// example) over streamable HTTP with the go-sdk client, and a real OpenID
// provider (internal/testkit/oidctest) issuing the access tokens.

// idServer is a gateway with JWT callers, on a port chosen before it
// starts, so that its default resource URI is the one the provider's
// tokens are issued for.
type idServer struct {
	*running
	base     string // http://127.0.0.1:PORT
	resource string // base + "/mcp"
	clock    *oidctest.Clock
	log      *syncBuffer // the gateway's log, unless the test gave a Logger
}

// keysLoaded returns once the gateway has the issuer's signing keys: they
// are fetched in the background, JWT callers getting 503 until then.
func (g *idServer) keysLoaded(t *testing.T) {
	t.Helper()
	waitFor(t, g.log, "signing keys loaded")
}

// startIdentity starts a gateway listening at a free port with cfg (the
// resource defaults to its address), the test clock, a memory ledger.
func startIdentity(t *testing.T, cfg gateway.Config, port int) *idServer {
	t.Helper()
	addr := "127.0.0.1:" + strconv.Itoa(port)
	cfg.HTTP = addr
	cfg.Ledger = "memory"
	if cfg.Audit == "" {
		cfg.Audit = filepath.Join(t.TempDir(), "audit.jsonl")
	}
	log := &syncBuffer{}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(log, nil))
	}
	c := oidctest.NewClock()
	cfg.IdentityOptions = append(cfg.IdentityOptions, identity.WithClock(c.Now))
	return &idServer{running: serveGateway(t, cfg), base: "http://" + addr, resource: "http://" + addr + "/mcp", clock: c, log: log}
}

// connectToken opens a go-sdk session under proto with a bearer token.
func connectToken(t *testing.T, url, proto, token string) (*mcp.ClientSession, error) {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	client := mcp.NewClient(&mcp.Implementation{Name: "identity-e2e", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: mcptest.Bearer{Token: token, Next: tr}}, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: proto})
	if err == nil {
		t.Cleanup(func() { _ = cs.Close() })
	}
	return cs, err
}

func listNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	return mcptest.ToolNames(t, t.Context(), cs)
}

func callText(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err)
	require.Len(t, res.Content, 1)
	return res.Content[0].(*mcp.TextContent).Text, res.IsError
}

// post sends one JSON-RPC request to /mcp with the Authorization header
// authz ("" for none) and returns the response, its body read.
func post(t *testing.T, url, authz, body string, header ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// countCall is a sessionless (2026-07-28) tools/call of count: a request
// that, served, leaves a trace (the counter of key).
func countCall(key string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"count","arguments":{"key":%q}}}`, key)
}

// Tools of the bundled example each provider client sees.
var (
	managerTools = []string{"echo", "add", "getReward", "price", "fail", "inner", "count", "sleep"}
	readerTools  = []string{"echo", "add", "fail", "inner", "count", "sleep"}
)

// startWithProvider starts the OpenID provider and a gateway serving serve
// on a free port, trusting the provider as its issuer; it returns once the
// gateway has loaded the provider's keys. resource is the gateway's /mcp,
// the audience of the provider's tokens.
func startWithProvider(t *testing.T, serve config.Serve) (p *oidctest.Provider, g *idServer, resource string) {
	t.Helper()
	port := oidctest.FreePort(t)
	resource = "http://127.0.0.1:" + strconv.Itoa(port) + "/mcp"
	p = oidctest.Start(t, 0, resource)
	serve.Auth.Issuer = p.Issuer
	g = startIdentity(t, gateway.Config{Serve: serve}, port)
	g.keysLoaded(t)
	return p, g, resource
}

// TestIdentityE2E: tokens from a real OpenID provider, over streamable
// HTTP, under every protocol revision: the caller is what the claims say
// (roles from the configured claim), listing and calls follow; a tokens
// file serves beside it; a request without a token gets 401 pointing at
// the Protected Resource Metadata, whose authorization_servers is the
// issuer; every bad token gets 401 invalid_token and nothing is served;
// sessions are bound to their subject and source.
func TestIdentityE2E(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// The tokens file has an admin, and a subject named like a JWT one.
	tokens := writeTokens(t, dir, &toolcall.Caller{Subject: "ops", Roles: []string{"admin"}}, &toolcall.Caller{Subject: "alice-app", Roles: []string{"admin"}})
	p, g, resource := startWithProvider(t, config.Serve{Tokens: tokens, Auth: identity.Settings{RolesClaim: "realm_access.roles"}})
	require.Equal(t, resource, g.resource)
	metaURL := g.base + "/.well-known/oauth-protected-resource/mcp"

	alice := p.Token(t, "alice", resource)
	bob := p.Token(t, "bob", resource)

	for _, proto := range protocols {
		t.Run("callers/"+proto, func(t *testing.T) {
			a, err := connectToken(t, g.url, proto, alice)
			require.NoError(t, err)
			require.Equal(t, managerTools, listNames(t, a), "alice: roles [manager, reader] from realm_access.roles")
			text, isErr := callText(t, a, "getReward", map[string]any{"idReward": 7})
			require.False(t, isErr, text)

			b, err := connectToken(t, g.url, proto, bob)
			require.NoError(t, err)
			require.Equal(t, readerTools, listNames(t, b), "bob: no realm_access.roles claim, so no role: a signed-in caller")
			text, isErr = callText(t, b, "getReward", map[string]any{"idReward": 7})
			require.Equal(t, "Error: Unknown tool 'getReward'.", text)
			require.True(t, isErr)

			ops, err := connectToken(t, g.url, proto, "token-of-ops")
			require.NoError(t, err, "the tokens file beside the issuer")
			require.Contains(t, listNames(t, ops), "resetCounter")
		})
	}

	t.Run("no token", func(t *testing.T) {
		resp, body := post(t, g.url, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`)
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, body)
		require.Equal(t, `Bearer resource_metadata="`+metaURL+`"`, resp.Header.Get("WWW-Authenticate"))

		for _, u := range []string{metaURL, g.base + "/.well-known/oauth-protected-resource"} {
			mr, err := http.Get(u)
			require.NoError(t, err)
			var meta struct {
				Resource             string   `json:"resource"`
				AuthorizationServers []string `json:"authorization_servers"`
				BearerMethods        []string `json:"bearer_methods_supported"`
				ResourceName         string   `json:"resource_name"`
			}
			require.NoError(t, json.NewDecoder(mr.Body).Decode(&meta))
			mr.Body.Close()
			require.Equal(t, http.StatusOK, mr.StatusCode)
			assert.Equal(t, resource, meta.Resource)
			assert.Equal(t, []string{p.Issuer}, meta.AuthorizationServers)
			assert.Equal(t, []string{"header"}, meta.BearerMethods)
			assert.Equal(t, "toolgate", meta.ResourceName)
		}
		_, err := connectToken(t, g.url, "2025-11-25", "")
		require.Error(t, err, "no anonymous session with an issuer configured")
	})

	t.Run("bad tokens", func(t *testing.T) {
		good := p.Token(t, "alice", resource)
		parts := strings.Split(good, ".")
		payload, err := base64.RawURLEncoding.DecodeString(parts[1])
		require.NoError(t, err)
		set, err := jwk.Fetch(t.Context(), p.Issuer+"/jwks")
		require.NoError(t, err)
		k, ok := set.LookupKeyID("rsa-1")
		require.True(t, ok)
		var pub rsa.PublicKey
		require.NoError(t, jwk.Export(k, &pub))
		der, _ := x509.MarshalPKIXPublicKey(&pub)
		pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
		foreign, err := rsa.GenerateKey(rand.Reader, 2048)
		require.NoError(t, err)
		enc := base64.RawURLEncoding
		// An expired token is TestIdentityE2EExpired (it moves the clock).
		for _, tc := range []struct{ name, token string }{
			{"another audience", p.Token(t, "alice", p.OtherResource)},
			{"another issuer, same keys", oidctest.TokenFrom(t, p.Other, "alice", resource)},
			{"a key not in the set", oidctest.SignJWS(t, payload, jwa.RS256(), foreign, "mallory")},
			{"a key not in the set, a known kid", oidctest.SignJWS(t, payload, jwa.RS256(), foreign, "rsa-1")},
			{"alg none", enc.EncodeToString([]byte(`{"alg":"none","kid":"rsa-1"}`)) + "." + parts[1] + "."},
			{"HS256 with the public key as secret", oidctest.SignJWS(t, payload, jwa.HS256(), pubPEM, "rsa-1")},
			{"not a JWT", "not-a-token"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				key := "bad-" + strings.ReplaceAll(tc.name, " ", "-")
				resp, body := post(t, g.url, "Bearer "+tc.token, countCall(key), "Mcp-Protocol-Version", "2026-07-28")
				require.Equal(t, http.StatusUnauthorized, resp.StatusCode, body)
				require.Equal(t, `Bearer error="invalid_token", resource_metadata="`+metaURL+`"`, resp.Header.Get("WWW-Authenticate"))
				require.Equal(t, "invalid bearer token\n", body, "the reason is for the log only")
				_, err := connectToken(t, g.url, "2025-11-25", tc.token)
				require.Error(t, err)
				// Nothing was served: the counter of key was never touched.
				ops, err := connectToken(t, g.url, "2025-11-25", "token-of-ops")
				require.NoError(t, err)
				text, _ := callText(t, ops, "count", map[string]any{"key": key})
				require.Equal(t, "1", text)
			})
		}
	})

	t.Run("sessions belong to their subject and source", func(t *testing.T) {
		a, err := connectToken(t, g.url, "2025-11-25", alice)
		require.NoError(t, err)
		list := `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`
		for _, tc := range []struct {
			name, token string
			status      int
		}{
			{"another subject", bob, http.StatusForbidden},
			{"the tokens file's alice-app", "token-of-alice-app", http.StatusForbidden},
			{"the same subject, another token", p.Token(t, "alice", resource), http.StatusOK},
		} {
			resp, body := post(t, g.url, "Bearer "+tc.token, list, "Mcp-Session-Id", a.ID(), "Mcp-Protocol-Version", "2025-11-25")
			assert.Equal(t, tc.status, resp.StatusCode, "%s: %s", tc.name, body)
		}
	})
}

// TestIdentityE2EExpired: a token the provider issued an hour ago (the
// gateway's clock moved past exp and the 60 s leeway) gets 401
// invalid_token, also though it was verified and cached before.
func TestIdentityE2EExpired(t *testing.T) {
	t.Parallel()
	p, g, resource := startWithProvider(t, config.Serve{})
	tok := p.Token(t, "alice", resource)
	_, err := connectToken(t, g.url, "2025-11-25", tok)
	require.NoError(t, err)
	g.clock.Advance(time.Hour + 2*time.Minute)
	resp, body := post(t, g.url, "Bearer "+tok, countCall("expired"), "Mcp-Protocol-Version", "2026-07-28")
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, body)
	require.Contains(t, resp.Header.Get("WWW-Authenticate"), `error="invalid_token"`)
}

// TestIdentityE2EKeyRotation: the provider switches to a new signing key;
// its new tokens serve without a restart once the refetch limit allows,
// and the old key's tokens still serve.
func TestIdentityE2EKeyRotation(t *testing.T) {
	t.Parallel()
	p, g, resource := startWithProvider(t, config.Serve{})
	old := p.Token(t, "alice", resource)
	_, err := connectToken(t, g.url, "2025-11-25", old)
	require.NoError(t, err)

	p.Rotate(t)
	fresh := p.Token(t, "alice", resource)
	// The key set was fetched moments ago: an unknown kid refetches it
	// at most every identity.RefetchInterval.
	g.clock.Advance(identity.RefetchInterval)
	cs, err := connectToken(t, g.url, "2025-11-25", fresh)
	require.NoError(t, err, "a token of the new key, without a restart")
	require.Equal(t, managerTools, listNames(t, cs))
	_, err = connectToken(t, g.url, "2025-11-25", old)
	require.NoError(t, err, "the old key is still published")
}

// TestIdentityE2EIssuerDownAtStart: the issuer does not answer when
// toolgate starts. toolgate serves anyway (the tokens file works), a JWT
// gets 503 with Retry-After (not 401: the token was not judged), and once
// the issuer answers, JWT callers are served without a restart.
func TestIdentityE2EIssuerDownAtStart(t *testing.T) {
	t.Parallel()
	oidctest.Require(t)
	port, idpPort := oidctest.FreePort(t), oidctest.FreePort(t)
	resource := "http://127.0.0.1:" + strconv.Itoa(port) + "/mcp"
	issuer := "http://127.0.0.1:" + strconv.Itoa(idpPort)
	tokens := writeTokens(t, t.TempDir(), &toolcall.Caller{Subject: "ops", Roles: []string{"admin"}})
	g := startIdentity(t, gateway.Config{Serve: config.Serve{Tokens: tokens, Auth: identity.Settings{Issuer: issuer}}}, port)

	ops, err := connectToken(t, g.url, "2025-11-25", "token-of-ops")
	require.NoError(t, err, "the tokens file serves while the issuer is down")
	require.Contains(t, listNames(t, ops), "resetCounter")
	resp, body := post(t, g.url, "", countCall("x"), "Mcp-Protocol-Version", "2026-07-28")
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "no token is still 401: %s", body)

	// Any well-formed token of an accepted algorithm: it cannot be judged
	// while the keys are unknown (the background retries the fetch every
	// identity.RetryInterval, and the issuer is still down).
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	early := oidctest.SignJWS(t, []byte(`{"iss":"`+issuer+`","sub":"x","aud":"`+resource+`"}`), jwa.RS256(), key, "rsa-1")
	resp, body = post(t, g.url, "Bearer "+early, countCall("early"), "Mcp-Protocol-Version", "2026-07-28")
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, body)
	require.Equal(t, strconv.Itoa(identity.RetryAfterSeconds), resp.Header.Get("Retry-After"))

	p := oidctest.Start(t, idpPort, resource)
	require.Equal(t, issuer, p.Issuer)
	tok := p.Token(t, "alice", resource)
	g.keysLoaded(t) // retried in the background every identity.RetryInterval
	cs, err := connectToken(t, g.url, "2025-11-25", tok)
	require.NoError(t, err, "served once the issuer answers")
	require.Equal(t, managerTools, listNames(t, cs))
	text, _ := callText(t, ops, "count", map[string]any{"key": "early"})
	require.Equal(t, "1", text, "the 503 request was not served")
}

// TestIdentityNoDemoToken: with an issuer configured the bundled example
// offers no demo token (the operator wants the issuer's callers), and the
// start-up message says where tokens come from; the demo token is then an
// unknown token (401).
func TestIdentityNoDemoToken(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	jwks := filepath.Join(dir, "jwks.json")
	require.NoError(t, os.WriteFile(jwks, []byte(`{"keys":[]}`), 0o600))
	out := &syncBuffer{}
	port := oidctest.FreePort(t)
	g := startIdentity(t, gateway.Config{Stdout: out, Serve: config.Serve{Auth: identity.Settings{Issuer: "https://login.example.com", JWKS: jwks}}}, port)
	require.NotContains(t, out.String(), identity.DemoTokenValue)
	require.Contains(t, out.String(), "toolgate: accepting access tokens of https://login.example.com for "+g.resource+
		" (metadata: "+g.base+"/.well-known/oauth-protected-resource/mcp)\ntoolgate: a request without a token gets 401.\n")
	resp, body := post(t, g.url, "Bearer "+identity.DemoTokenValue, countCall("demo"), "Mcp-Protocol-Version", "2026-07-28")
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, body)
}
