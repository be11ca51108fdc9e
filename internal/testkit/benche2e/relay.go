package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The relay table: what the hop to an upstream MCP server costs. The
// upstream is the go-sdk's conformance server (its test_simple_text tool),
// over streamable HTTP (stateful) or stdio; the client speaks streamable
// HTTP to whatever is in front of it, pinned to revisionSessions, with
// b.inflight calls in flight on one session (or spread over -callers
// sessions).

// relaySpec is the call of the relay lines.
var relaySpec = callSpec{tool: "test_simple_text", want: "This is a simple text response for testing."}

// relayLine is one path to the upstream.
type relayLine struct {
	name  string
	front string // "direct", "proxy" or "toolgate"
	// upstream is how toolgate reaches the upstream: "http" or "stdio".
	upstream string
	// callers: the client sessions calls are spread over; identities: how
	// many distinct callers (tokens) they are.
	callers, identities int
	// bin is the toolgate binary (-toolgate, or -baseline).
	bin string
	// exchange: the callers sign in with JWTs, and toolgate exchanges
	// each caller's for a token of its own toward the upstream (RFC 8693).
	exchange bool

	results []measurement
	rss     string // toolgate's VmRSS after the last round
}

// relayLines are the lines of the relay table, in order.
func (b *bench) relayLines(filter *regexp.Regexp, callers int) []*relayLine {
	all := []*relayLine{
		{name: "upstream called directly", front: "direct", callers: 1, identities: 1},
		{name: "plain Go reverse proxy", front: "proxy", callers: 1, identities: 1},
		{name: "toolgate → HTTP upstream", front: "toolgate", upstream: "http", callers: 1, identities: 1},
		{name: "toolgate → stdio upstream", front: "toolgate", upstream: "stdio", callers: 1, identities: 1},
		{name: fmt.Sprintf("toolgate → HTTP, %d sessions, 1 caller", callers), front: "toolgate", upstream: "http", callers: callers, identities: 1},
		{name: fmt.Sprintf("toolgate → HTTP, %d sessions, %d callers", callers, callers), front: "toolgate", upstream: "http", callers: callers, identities: callers},
		{name: fmt.Sprintf("token exchange, %d sessions, 1 caller", callers), front: "toolgate", upstream: "http", callers: callers, identities: 1, exchange: true},
		{name: fmt.Sprintf("token exchange, %d sessions, %d callers", callers, callers), front: "toolgate", upstream: "http", callers: callers, identities: callers, exchange: true},
	}
	var out []*relayLine
	for _, l := range all {
		if filter != nil && !filter.MatchString(l.name) {
			continue
		}
		if l.front != "toolgate" {
			out = append(out, l)
			continue
		}
		l.bin = b.toolgate
		out = append(out, l)
		if b.baseline != "" {
			base := *l
			base.name, base.bin = l.name+" ("+b.baselineLabel+")", b.baseline
			out = append(out, &base)
		}
	}
	if len(out) == 0 {
		fatal(errors.New("-only matches no line"))
	}
	return out
}

// relayToken is the bearer token of caller i.
func relayToken(i int) string { return "relay-token-" + strconv.Itoa(i) }

// setupRelay writes the relay's registry (one row for the upstream's
// test_simple_text in a section granted to role bench), an empty policy
// (the sections decide) and a tokens file of callers callers.
func (b *bench) setupRelay(callers int) {
	dir := filepath.Join(b.dir, "relay")
	if err := os.MkdirAll(filepath.Join(dir, "policy"), 0o755); err != nil {
		fatal(err)
	}
	files := map[string]string{
		"registry.yaml": "sections:\n  everything: { roles: [bench] }\ntools:\n" +
			"  - { name: test_simple_text, method: \"upstream:everything/test_simple_text\", section: everything }\n",
		"policy/grant.rego": "package toolgate.grant\n",
	}
	entries := map[string]any{}
	for i := range callers {
		sum := sha256.Sum256([]byte(relayToken(i)))
		entries[hex.EncodeToString(sum[:])] = map[string]any{"subject": fmt.Sprintf("caller-%d", i), "roles": []string{"bench"}}
	}
	tokens, _ := json.Marshal(entries)
	files["tokens.json"] = string(tokens)
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			fatal(err)
		}
	}
	b.setupExchange(dir, callers)
}

// The JWT callers' authorization server: toolgate reads its keys from a
// JWKS file and its tokens are for relayResource.
const (
	relayIssuer   = "https://idp.bench.invalid"
	relayResource = "https://toolgate.bench.invalid/mcp"
)

// setupExchange writes the authorization server's JWKS file, signs a JWT
// for each of callers callers (b.jwts) and serves its token endpoint in
// this process (b.tokenURL): it answers every token exchange with a token
// of its own for the subject token, valid for an hour.
func (b *bench) setupExchange(dir string, callers int) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		fatal(err)
	}
	pub, err := jwk.Import(key.Public())
	if err != nil {
		fatal(err)
	}
	_ = pub.Set(jwk.KeyIDKey, "bench")
	set := jwk.NewSet()
	_ = set.AddKey(pub)
	jwks, _ := json.Marshal(set)
	if err := os.WriteFile(filepath.Join(dir, "jwks.json"), jwks, 0o644); err != nil {
		fatal(err)
	}
	h := jws.NewHeaders()
	_ = h.Set(jws.KeyIDKey, "bench")
	now := time.Now()
	for i := range callers {
		claims, _ := json.Marshal(map[string]any{"iss": relayIssuer, "aud": relayResource, "sub": fmt.Sprintf("caller-%d", i),
			"roles": []string{"bench"}, "iat": now.Unix(), "exp": now.Add(24 * time.Hour).Unix()})
		tok, err := jws.Sign(claims, jws.WithKey(jwa.ES256(), key, jws.WithProtectedHeaders(h)))
		if err != nil {
			fatal(err)
		}
		b.jwts = append(b.jwts, string(tok))
	}
	addr := freeAddr()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		sum := sha256.Sum256([]byte(r.PostFormValue("subject_token")))
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "exchanged-" + hex.EncodeToString(sum[:8]), "token_type": "Bearer",
			"issued_token_type": "urn:ietf:params:oauth:token-type:access_token", "expires_in": 3600})
	})
	go func() { fatal(http.ListenAndServe(addr, mux)) }()
	waitListening(addr)
	b.tokenURL = "http://" + addr + "/token"
}

// measureRelay starts l's processes, connects l.callers client sessions
// and drives them.
func (b *bench) measureRelay(l *relayLine) measurement {
	dir := filepath.Join(b.dir, "relay")
	var stops []func()
	defer func() {
		for _, s := range slices.Backward(stops) {
			s()
		}
	}()
	start := func(name string, args ...string) *exec.Cmd {
		cmd := exec.Command(name, args...)
		cmd.Env = b.env()
		cmd.Stderr = b.devNull
		if err := cmd.Start(); err != nil {
			fatal(err)
		}
		stops = append(stops, func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
		return cmd
	}
	var up string // the upstream's endpoint, when over HTTP
	var upCmd *exec.Cmd
	if l.front != "toolgate" || l.upstream == "http" {
		addr := freeAddr()
		upCmd = start(b.relayServer, "-http", addr, "-stateless=false")
		waitListening(addr)
		up = "http://" + addr + "/mcp"
	}
	front, endpoint := (*exec.Cmd)(nil), up
	switch l.front {
	case "direct":
		front = upCmd
	case "proxy":
		addr := freeAddr()
		front = start(b.self, "proxy", addr, strings.TrimSuffix(up, "/mcp"))
		waitListening(addr)
		endpoint = "http://" + addr + "/mcp"
	case "toolgate":
		upstreamYAML := fmt.Sprintf("{ name: everything, url: %q }", up)
		if l.exchange {
			upstreamYAML = fmt.Sprintf("{ name: everything, url: %q, auth: { type: token_exchange, token_url: %q, client_id: bench, audience: everything } }", up, b.tokenURL)
		}
		if l.upstream == "stdio" {
			upstreamYAML = fmt.Sprintf("{ name: everything, command: %q }", b.relayServer)
		}
		config := filepath.Join(b.dir, "relay", l.upstream+".yaml")
		if err := os.WriteFile(config, []byte("upstreams:\n  - "+upstreamYAML+"\n"), 0o644); err != nil {
			fatal(err)
		}
		addr := freeAddr()
		args := []string{"serve", "--http", addr, "--config", config, "--registry", filepath.Join(dir, "registry.yaml"),
			"--policy", filepath.Join(dir, "policy")}
		if l.exchange {
			args = append(args, "--issuer", relayIssuer, "--jwks", filepath.Join(dir, "jwks.json"), "--resource", relayResource)
		} else {
			args = append(args, "--tokens", filepath.Join(dir, "tokens.json"))
		}
		cmd := exec.Command(l.bin, args...)
		cmd.Env = append(b.env(), b.toolgateEnv...)
		cmd.Stderr = b.devNull
		if err := cmd.Start(); err != nil {
			fatal(err)
		}
		stops = append(stops, func() {
			// SIGTERM, so that toolgate closes its upstream sessions (and
			// stdio children) itself.
			_ = cmd.Process.Signal(os.Interrupt)
			done := make(chan struct{})
			go func() { _ = cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				<-done
			}
		})
		front = cmd
		waitListening(addr)
		endpoint = "http://" + addr + "/mcp"
	}
	sessions := make([]*mcp.ClientSession, l.callers)
	for i := range sessions {
		tok := relayToken(i % l.identities)
		if l.exchange {
			tok = b.jwts[i%l.identities]
		}
		client := &http.Client{Transport: bearer{next: b.transport, token: tok}}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "benche2e", Version: "1"}, nil).Connect(context.Background(),
			&mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: client, DisableStandaloneSSE: true},
			&mcp.ClientSessionOptions{ProtocolVersion: revisionSessions})
		if err != nil {
			fatal(fmt.Errorf("%s: %w", l.name, err))
		}
		if got := cs.InitializeResult().ProtocolVersion; got != revisionSessions {
			fatal(fmt.Errorf("%s: the session negotiated protocol revision %s, not %s", l.name, got, revisionSessions))
		}
		sessions[i] = cs
		stops = append(stops, func() { _ = cs.Close() })
	}
	b.current = l.name
	pid := front.Process.Pid
	m := b.drive(context.Background(), sessions, relaySpec, pid)
	if l.front == "toolgate" {
		l.rss = procStatus(pid, "VmRSS")
	}
	return m
}

// relayTable measures the relay lines round by round and prints them.
func (b *bench) relayTable(lines []*relayLine, rounds int) {
	fmt.Printf("relay: go-sdk conformance server's test_simple_text, streamable HTTP %s to the front, %d calls in flight, %d calls per measurement, %d rounds\n\n",
		revisionSessions, b.inflight, b.calls, rounds)
	for round := range rounds {
		fmt.Fprintf(os.Stderr, "benche2e: relay round %d of %d\n", round+1, rounds)
		for _, l := range lines {
			l.results = append(l.results, b.measureRelay(l))
		}
	}
	type med struct {
		rate, cpu float64
		p50, p99  time.Duration
	}
	meds := map[string]med{}
	many := map[string]float64{} // the many-session lines' medians, by binary, exchange and whether many callers
	fmt.Printf("%-54s %8s %15s %8s %8s %8s %8s %9s %9s %8s %10s\n", "path", "calls/s", "min–max", "×direct", "×proxy", "p50 ms", "p99 ms", "+p50 ms", "+p99 ms", "CPU µs", "RSS")
	for _, l := range lines {
		var rates, cpus []float64
		var p50s, p99s []float64
		for _, m := range l.results {
			rates = append(rates, m.rate)
			cpus = append(cpus, float64(m.cpu)/float64(time.Microsecond))
			p50s = append(p50s, float64(m.p50))
			p99s = append(p99s, float64(m.p99))
		}
		m := med{rate: median(rates), cpu: median(cpus), p50: time.Duration(median(p50s)), p99: time.Duration(median(p99s))}
		meds[l.front+"/"+l.upstream] = m
		ratio := func(base string) string {
			if b, ok := meds[base]; ok {
				return fmt.Sprintf("%.2f", m.rate/b.rate)
			}
			return "-"
		}
		added := func(d time.Duration, of func(med) time.Duration) string {
			if b, ok := meds["direct/"]; ok {
				return fmt.Sprintf("%+.2f", float64(d-of(b))/float64(time.Millisecond))
			}
			return "-"
		}
		cpu := fmt.Sprintf("%.0f", m.cpu)
		rss := l.rss
		if rss == "" {
			rss = "-"
		}
		fmt.Printf("%-54s %8.0f %7.0f–%-7.0f %8s %8s %8.2f %8.2f %9s %9s %8s %10s\n", l.name, m.rate, slices.Min(rates), slices.Max(rates),
			ratio("direct/"), ratio("proxy/"), float64(m.p50)/float64(time.Millisecond), float64(m.p99)/float64(time.Millisecond),
			added(m.p50, func(x med) time.Duration { return x.p50 }), added(m.p99, func(x med) time.Duration { return x.p99 }), cpu, rss)
		if l.callers > 1 {
			many[fmt.Sprint(l.bin, l.exchange, l.identities > 1)] = m.rate
		}
	}
	// Each caller with sessions of its own, against one caller's.
	for _, l := range lines {
		if l.callers > 1 && l.identities > 1 {
			if one, ok := many[fmt.Sprint(l.bin, l.exchange, false)]; ok {
				fmt.Printf("%s: %.2f× the calls/s of one caller\n", l.name, many[fmt.Sprint(l.bin, l.exchange, true)]/one)
			}
		}
	}
}

// proxy serves a plain httputil.ReverseProxy at addr in front of target
// (scheme and host), with its defaults.
func proxy(addr, target string) {
	u, err := url.Parse(target)
	if err != nil {
		fatal(err)
	}
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(u) }}
	fatal(http.ListenAndServe(addr, rp))
}
