package gateway_test

//lint:file-ignore SA1019 sampling is deprecated from protocol revision 2026-07-28 on; the clients of earlier revisions declare it

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwt"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/identity"
	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/server/gateway"
	"github.com/toolgate/toolgate/internal/testkit/mcptest"
	"github.com/toolgate/toolgate/internal/testkit/oidctest"
	"github.com/toolgate/toolgate/internal/testkit/proctest"
	"github.com/toolgate/toolgate/toolcall"
	"github.com/toolgate/toolgate/upstream"
)

// startEverythingHTTP runs the go-sdk's conformance server over streamable
// HTTP (stateless or not) until the test ends, and returns its URL once it
// answers.
func startEverythingHTTP(t *testing.T, stateless bool) string {
	t.Helper()
	bin := everythingServer(t)
	addr := "127.0.0.1:" + strconv.Itoa(oidctest.FreePort(t))
	cmd := exec.Command(bin, "-http", addr, "-stateless="+strconv.FormatBool(stateless))
	var stderr proctest.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return "http://" + addr
		}
		require.True(t, time.Now().Before(deadline), "the conformance server did not listen: %s", stderr.String())
	}
}

// connectClient opens a go-sdk streamable HTTP session as caller under
// proto ("": the client's default revision), declaring sampling and
// elicitation, which it answers.
func connectClient(t *testing.T, url, proto string, caller *toolcall.Caller) *mcp.ClientSession {
	t.Helper()
	tr := &http.Transport{}
	client := mcp.NewClient(&mcp.Implementation{Name: "relay-sessions-test", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "sampled " + caller.Subject}}, nil
		},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"username": caller.Subject}}, nil
		},
	})
	var opts *mcp.ClientSessionOptions
	if proto != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: proto}
	}
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: url,
		HTTPClient: &http.Client{Transport: mcptest.Bearer{Token: tokenFor(caller), Next: tr}}, DisableStandaloneSSE: true}, opts)
	require.NoError(t, err, "connect under %q", proto)
	t.Cleanup(func() { _ = cs.Close(); tr.CloseIdleConnections() })
	return cs
}

// TestRelayRealClients (docs/contract.md §19, "Handshake", "Many at
// once"): through the gateway, to the go-sdk's conformance server as a
// stateful HTTP upstream, a stateless one and a stdio one, a go-sdk client
// at its default revision and one at 2025-11-25 get every call answered:
// a plain tool, sampling (which the client declares), and 20 calls at
// once from the first contact. Nothing of the client's revision reaches
// the upstream's handshake (a stateful go-sdk server answers 400 to an
// initialize whose MCP-Protocol-Version header is not the one it is
// offered).
func TestRelayRealClients(t *testing.T) {
	bin := everythingServer(t)
	stateful, stateless := startEverythingHTTP(t, false), startEverythingHTTP(t, true)
	dir := t.TempDir()
	var rows string
	for _, up := range []string{"sf", "sl", "io"} {
		rows += fmt.Sprintf("  - {name: %s_simple, method: \"upstream:%s/test_simple_text\"}\n", up, up)
		rows += fmt.Sprintf("  - {name: %s_sampling, method: \"upstream:%s/test_sampling\", arguments: [{name: prompt, type: string, required: true}]}\n", up, up)
		rows += fmt.Sprintf("  - {name: %s_elicitation, method: \"upstream:%s/test_elicitation\", arguments: [{name: message, type: string, required: true}]}\n", up, up)
	}
	reg, pol := writeSource(t, dir, "tools:\n"+rows, "package toolgate.grant\n")
	callers := []*toolcall.Caller{}
	for i := range 4 {
		callers = append(callers, &toolcall.Caller{Subject: fmt.Sprintf("c%d", i)})
	}
	watch := false
	g := startGateway(t, gateway.Config{
		Serve: config.Serve{Registry: reg, Policy: pol, Tokens: writeTokens(t, dir, callers...),
			Upstreams: []upstream.Settings{{Name: "sf", URL: stateful + "/mcp"}, {Name: "sl", URL: stateless + "/mcp"}, {Name: "io", Command: bin}},
			Ledger:    "memory", Audit: filepath.Join(dir, "audit.jsonl"), Watch: &watch},
		Stderr: &proctest.Buffer{},
	})
	i := 0
	for _, proto := range []string{"", "2025-11-25"} {
		for _, up := range []string{"sf", "sl", "io"} {
			caller := callers[i%len(callers)]
			i++
			name := "default revision"
			if proto != "" {
				name = proto
			}
			t.Run(name+"/"+up, func(t *testing.T) {
				cs := connectClient(t, g.url, proto, caller)
				// 20 calls at once, the caller's first.
				const n = 20
				got := make(chan string, n)
				var wg sync.WaitGroup
				for range n {
					wg.Go(func() {
						res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: up + "_simple", Arguments: map[string]any{}})
						switch {
						case err != nil:
							got <- err.Error()
						case len(res.Content) != 1:
							got <- fmt.Sprintf("%d contents", len(res.Content))
						default:
							got <- res.Content[0].(*mcp.TextContent).Text
						}
					})
				}
				wg.Wait()
				close(got)
				answers := map[string]int{}
				for a := range got {
					answers[a]++
				}
				assert.Equal(t, map[string]int{"This is a simple text response for testing.": n}, answers)

				// Sampling and elicitation on 2025-11-25 (2026-07-28 has no
				// server-to-client requests), from the upstreams that can
				// make requests (a stateless HTTP server cannot).
				if proto != "" && up != "sl" {
					text, isErr := callText(t, cs, up+"_sampling", map[string]any{"prompt": "hi"})
					assert.False(t, isErr, text)
					assert.Equal(t, "LLM response: sampled "+caller.Subject, text)
					text, isErr = callText(t, cs, up+"_elicitation", map[string]any{"message": "who?"})
					assert.False(t, isErr, text)
					assert.Equal(t, "Elicitation result: action=accept, content=map[username:"+caller.Subject+"]", text)
				}
			})
		}
	}
}

// exchangeRecorder is a token endpoint in front of the provider's: it
// forwards every request as it came and records, for each token it
// answers, the id (jti) of the subject token it was exchanged for.
type exchangeRecorder struct {
	url string
	mu  sync.Mutex
	of  map[string]string // exchanged token's jti → subject token's jti
}

func startExchangeRecorder(t *testing.T, provider string) *exchangeRecorder {
	t.Helper()
	x := &exchangeRecorder{of: map[string]string{}}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		form, _ := url.ParseQuery(string(body))
		req, _ := http.NewRequestWithContext(r.Context(), r.Method, provider+r.URL.Path, bytes.NewReader(body))
		req.Header = r.Header.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		answer, _ := io.ReadAll(resp.Body)
		var tok struct {
			AccessToken string `json:"access_token"`
		}
		if json.Unmarshal(answer, &tok) == nil && tok.AccessToken != "" {
			x.mu.Lock()
			x.of[jtiOf(t, tok.AccessToken)] = jtiOf(t, form.Get("subject_token"))
			x.mu.Unlock()
		}
		w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(answer)
	}))
	t.Cleanup(ts.Close)
	x.url = ts.URL
	return x
}

// subjectOf is the jti of the subject token the token with jti was
// exchanged for.
func (x *exchangeRecorder) subjectOf(jti string) string {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.of[jti]
}

// jtiOf reads a JWT's jti without verifying it (a test's bookkeeping).
func jtiOf(t *testing.T, token string) string {
	t.Helper()
	tok, err := jwt.ParseInsecure([]byte(token))
	if err != nil {
		return ""
	}
	jti, _ := tok.JwtID()
	return jti
}

// TestTokenExchangePerToken (docs/contract.md §17, threat T1): two access
// tokens of one subject, each in a client session of its own, call a
// token-exchange upstream (stateful and stateless) in turns: every call
// reaches the upstream with the exchange of the token it arrived with,
// never the exchange of the subject's first token.
func TestTokenExchangePerToken(t *testing.T) {
	port := oidctest.FreePort(t)
	resource := "http://127.0.0.1:" + strconv.Itoa(port) + "/mcp"
	p := oidctest.StartWith(t, 0, oidctest.StartOptions{Resource: resource})
	x := startExchangeRecorder(t, p.Issuer)
	verify := jwtVerifier(t, p)
	stateless, stateful := startAuthUpstream(t, true, verify), startAuthUpstream(t, false, verify)
	dir := t.TempDir()
	reg, pol := writeSource(t, dir, `tools:
  - {name: whoami_tx, method: "upstream:tx/whoami"}
  - {name: whoami_txs, method: "upstream:txs/whoami"}
`, "package toolgate.grant\n")
	auth := &upstream.Auth{Type: upstream.AuthTokenExchange, TokenURL: x.url + "/token", ClientID: "gateway-app",
		ClientSecret: "gateway-secret", Resource: p.UpstreamResource}
	g := startIdentity(t, gateway.Config{Serve: config.Serve{Registry: reg, Policy: pol, Auth: identity.Settings{Issuer: p.Issuer},
		Upstreams: []upstream.Settings{{Name: "tx", URL: stateless.url, Auth: auth}, {Name: "txs", URL: stateful.url, Auth: auth}}}}, port)

	first, second := p.Token(t, "alice", resource), p.Token(t, "alice", resource)
	require.NotEqual(t, jtiOf(t, first), jtiOf(t, second))
	sessions := map[string]*mcp.ClientSession{}
	for _, tok := range []string{first, second} {
		cs, err := connectToken(t, g.url, "2025-11-25", tok)
		require.NoError(t, err)
		sessions[tok] = cs
	}
	for _, tool := range []string{"whoami_tx", "whoami_txs"} {
		for round := range 3 {
			for _, tok := range []string{first, second} {
				text, isErr := callText(t, sessions[tok], tool, map[string]any{})
				require.False(t, isErr, text)
				var w whoami
				require.NoError(t, json.Unmarshal([]byte(text), &w), text)
				assert.Equal(t, "alice-app", w.Sub)
				assert.Equal(t, jtiOf(t, tok), x.subjectOf(w.JTI), "%s, round %d: the exchange of the call's own token", tool, round)
			}
		}
	}
}
