package gateway_test

import (
	"crypto/rand"
	"crypto/rsa"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/identity"
	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/server/gateway"
	"github.com/toolgate/toolgate/internal/testkit/mcptest"
	"github.com/toolgate/toolgate/internal/testkit/oidctest"
	"github.com/toolgate/toolgate/toolcall"
)

// benchAdd measures calls of add (2 + 3) over one go-sdk session on
// streamable HTTP to url, with the bearer token.
func benchAdd(b *testing.B, url, token string) {
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	cs, err := client.Connect(b.Context(), &mcp.StreamableClientTransport{Endpoint: url,
		HTTPClient: &http.Client{Transport: mcptest.Bearer{Token: token, Next: tr}}, DisableStandaloneSSE: true}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	params := &mcp.CallToolParams{Name: "add", Arguments: map[string]any{"a": 2, "b": 3}}
	b.ReportAllocs()
	for b.Loop() {
		res, err := cs.CallTool(b.Context(), params)
		if err != nil || res.IsError {
			b.Fatalf("call: %v %+v", err, res)
		}
	}
}

// BenchmarkGovernedCallAuth measures one governed tools/call (add, the
// bundled example, a go-sdk session over streamable HTTP on loopback) by
// a tokens-file caller and by a JWT caller (RS256, verified once and then
// cached, as a steady client is), side by side in one run; and a JWT
// caller with the verified-token cache off, verifying each request's
// signature, for scale. The keys are a JWKS file: no provider needed.
//
//	go test -run '^$' -bench GovernedCallAuth -benchmem -count 5 ./internal/server/gateway
func BenchmarkGovernedCallAuth(b *testing.B) {
	const issuer, resource = "https://login.example.com/realms/acme", "http://127.0.0.1/mcp"
	dir := b.TempDir()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		b.Fatal(err)
	}
	jwks := oidctest.PublishJWKS(b, jwa.RS256(), key)
	now := time.Now().Unix()
	// A token of the size real issuers send: a few groups, scope, email.
	payload := fmt.Sprintf(`{"iss":%q,"sub":"alice","aud":%q,"exp":%d,"iat":%d,"client_id":"agent-app","scope":"tools:read tools:call",`+
		`"email":"alice@example.com","roles":["manager","reader"],"groups":["eng","payments","oncall"]}`, issuer, resource, now+3600, now)
	tok := jwks.Sign(b, payload)
	tokens := writeTokens(b, dir, &toolcall.Caller{Subject: "ops", Roles: []string{"manager", "reader"}})
	auth := identity.Settings{Issuer: issuer, JWKS: jwks.Path, Resource: resource}
	serve := func(cache int) *running {
		log := &syncBuffer{}
		g := startGateway(b, gateway.Config{Logger: slog.New(slog.NewTextHandler(log, nil)), IdentityOptions: []identity.Option{identity.WithCacheSize(cache)},
			Serve: config.Serve{Tokens: tokens, Auth: auth, Ledger: "memory", Audit: filepath.Join(b.TempDir(), "audit.jsonl")}})
		waitFor(b, log, "signing keys loaded") // fetched in the background
		return g
	}
	cached, uncached := serve(identity.DefaultCacheSize), serve(0)
	for _, c := range []struct {
		name  string
		g     *running
		token string
	}{
		{"tokens-file", cached, "token-of-ops"},
		{"jwt-RS256-cached", cached, tok},
		{"jwt-RS256-uncached", uncached, tok},
	} {
		b.Run(c.name, func(b *testing.B) { benchAdd(b, c.g.url, c.token) })
	}
}
