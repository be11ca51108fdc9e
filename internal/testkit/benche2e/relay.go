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
// over streamable HTTP or stdio; the client speaks streamable HTTP to
// whatever is in front of it, in one group of lines at the go-sdk's
// default revision (2026-07-28, sessionless: the upstream then runs
// stateless, as such a client's server would) and in one pinned to
// revisionSessions (the upstream stateful), with b.inflight calls in
// flight on one session (or spread over -callers sessions).

// relaySpec is the call of the relay lines.
var relaySpec = callSpec{tool: "test_simple_text", want: "This is a simple text response for testing."}

// relayLine is one path to the upstream.
type relayLine struct {
	name  string
	front string // "direct", "proxy" or "toolgate"
	// upstream is how toolgate reaches the upstream: "http" or "stdio".
	upstream string
	// revision is the protocol revision the client pins; "" is the
	// go-sdk's default (the line checks it is revisionSessionless).
	revision string
	// callers: the client sessions calls are spread over; identities: how
	// many distinct callers (tokens) they are.
	callers, identities int
	// bin is the toolgate binary (-toolgate, or -baseline); env what is
	// added to its environment (-toolgate-env, or -baseline-env).
	bin string
	env []string
	// exchange: the callers sign in with JWTs, and toolgate exchanges
	// each caller's for a token of its own toward the upstream (RFC 8693).
	exchange bool

	results []measurement
	rss     string // toolgate's VmRSS after the last round
	// idle is the resident memory an idle caller session added, per
	// session, in each round (lines of many callers).
	idle []float64
}

// group is the line's group: its revision as the table prints it.
func (l *relayLine) group() string {
	if l.revision == "" {
		return revisionSessionless + " (default)"
	}
	return l.revision
}

// relayLines are the lines of the relay table, in order: a group per
// client revision, each with the direct and proxy lines its toolgate lines
// are compared with; the many-caller lines are in the revisionSessions
// group (sessions of their own per caller are what they measure).
func (b *bench) relayLines(filter *regexp.Regexp, callers int) []*relayLine {
	var all []*relayLine
	for _, rev := range []string{"", revisionSessions} {
		all = append(all,
			&relayLine{name: "upstream called directly", front: "direct", revision: rev, callers: 1, identities: 1},
			&relayLine{name: "plain Go reverse proxy", front: "proxy", revision: rev, callers: 1, identities: 1},
			&relayLine{name: "toolgate → HTTP upstream", front: "toolgate", upstream: "http", revision: rev, callers: 1, identities: 1},
			&relayLine{name: "toolgate → stdio upstream", front: "toolgate", upstream: "stdio", revision: rev, callers: 1, identities: 1})
		if rev == revisionSessions {
			all = append(all,
				&relayLine{name: fmt.Sprintf("toolgate → HTTP, %d sessions, 1 caller", callers), front: "toolgate", upstream: "http", revision: rev, callers: callers, identities: 1},
				&relayLine{name: fmt.Sprintf("toolgate → HTTP, %d sessions, %d callers", callers, callers), front: "toolgate", upstream: "http", revision: rev, callers: callers, identities: callers},
				&relayLine{name: fmt.Sprintf("token exchange, %d sessions, 1 caller", callers), front: "toolgate", upstream: "http", revision: rev, callers: callers, identities: 1, exchange: true},
				&relayLine{name: fmt.Sprintf("token exchange, %d sessions, %d callers", callers, callers), front: "toolgate", upstream: "http", revision: rev, callers: callers, identities: callers, exchange: true})
		}
	}
	var out []*relayLine
	for _, l := range all {
		if filter != nil && !filter.MatchString(l.group()+" "+l.name) {
			continue
		}
		if l.front != "toolgate" {
			out = append(out, l)
			continue
		}
		l.bin, l.env = b.toolgate, b.toolgateEnv
		out = append(out, l)
		if b.baseline != "" {
			base := *l
			base.name, base.bin, base.env = l.name+" ("+b.baselineLabel+")", b.baseline, b.baselineEnv
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
		// A client of the sessionless revision talks to a stateless
		// server; the stateful one serves the revisions with sessions.
		upCmd = start(b.relayServer, "-http", addr, "-stateless="+strconv.FormatBool(l.revision == ""))
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
		cmd.Env = append(b.env(), l.env...)
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
	pid := front.Process.Pid
	b.current = l.group() + " " + l.name
	want := l.revision
	if want == "" {
		want = revisionSessionless
	}
	sessions := make([]*mcp.ClientSession, l.callers)
	var rss1 int64 // toolgate's resident memory with one caller session, warm
	for i := range sessions {
		tok := relayToken(i % l.identities)
		if l.exchange {
			tok = b.jwts[i%l.identities]
		}
		client := &http.Client{Transport: bearer{next: b.transport, token: tok}}
		var opts *mcp.ClientSessionOptions
		if l.revision != "" {
			opts = &mcp.ClientSessionOptions{ProtocolVersion: l.revision}
		}
		var cs *mcp.ClientSession
		var err error
		// A JWT front answers 503 until it has read its keys (in the
		// background after it listens): wait for that, for at most a minute.
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
			cs, err = mcp.NewClient(&mcp.Implementation{Name: "benche2e", Version: "1"}, nil).Connect(context.Background(),
				&mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: client, DisableStandaloneSSE: true}, opts)
			if err == nil || i > 0 || !strings.Contains(err.Error(), http.StatusText(http.StatusServiceUnavailable)) || time.Now().After(deadline) {
				break
			}
		}
		if err != nil {
			fatal(fmt.Errorf("%s: %w", b.current, err))
		}
		if got := cs.InitializeResult().ProtocolVersion; got != want {
			fatal(fmt.Errorf("%s: the session negotiated protocol revision %s, not %s", b.current, got, want))
		}
		sessions[i] = cs
		stops = append(stops, func() { _ = cs.Close() })
		if l.front == "toolgate" && l.callers > 1 {
			// One call opens the caller's upstream session; the session
			// then stays idle until the measurement.
			b.drive1(context.Background(), cs, relaySpec)
			if i == 0 {
				rss1 = rssBytes(pid)
			}
		}
	}
	if l.front == "toolgate" && l.callers > 1 {
		l.idle = append(l.idle, float64(rssBytes(pid)-rss1)/float64(l.callers-1))
	}
	m := b.drive(context.Background(), sessions, relaySpec, pid)
	if l.front == "toolgate" {
		l.rss = procStatus(pid, "VmRSS")
	}
	return m
}

// relayTable measures the relay lines round by round (every line once in
// each round, in order) and prints them, a group per client revision: each
// line's median calls/s and range, its ratios to the direct and the proxy
// line of its group, p50 and p99 latency and what each adds to the direct
// line's, the front's CPU per call, and toolgate's resident memory (and,
// for many callers, what one idle caller session added to it). A line
// that answered no call is an error: drive fails on the first call that
// fails, and the table refuses a line without a measured call.
func (b *bench) relayTable(lines []*relayLine, rounds int) {
	fmt.Printf("relay: go-sdk conformance server's test_simple_text over streamable HTTP, the client at %s (the go-sdk's default) and at %s, %d calls in flight, %d calls per measurement, %d rounds\n",
		revisionSessionless, revisionSessions, b.inflight, b.calls, rounds)
	for round := range rounds {
		fmt.Fprintf(os.Stderr, "benche2e: relay round %d of %d\n", round+1, rounds)
		for _, l := range lines {
			l.results = append(l.results, b.measureRelay(l))
		}
	}
	if err := unanswered(lines); err != nil {
		fatal(err)
	}
	type med struct {
		rate, cpu float64
		p50, p99  time.Duration
	}
	meds := map[string]med{}     // by group, front and upstream
	many := map[string]float64{} // the many-session lines' medians, by binary, exchange and whether many callers
	group := ""
	for _, l := range lines {
		if l.group() != group {
			group = l.group()
			fmt.Printf("\nclient at %s\n", group)
			fmt.Printf("%-54s %8s %15s %8s %8s %8s %8s %9s %9s %8s %10s %12s\n", "path", "calls/s", "min–max", "×direct", "×proxy", "p50 ms", "p99 ms", "+p50 ms", "+p99 ms", "CPU µs", "RSS", "idle session")
		}
		var rates, cpus []float64
		var p50s, p99s []float64
		for _, m := range l.results {
			rates = append(rates, m.rate)
			cpus = append(cpus, float64(m.cpu)/float64(time.Microsecond))
			p50s = append(p50s, float64(m.p50))
			p99s = append(p99s, float64(m.p99))
		}
		m := med{rate: median(rates), cpu: median(cpus), p50: time.Duration(median(p50s)), p99: time.Duration(median(p99s))}
		if l.bin == b.toolgate || l.front != "toolgate" {
			meds[group+"/"+l.front+"/"+l.upstream] = m
		}
		ratio := func(front string) string {
			if b, ok := meds[group+"/"+front+"/"]; ok {
				return fmt.Sprintf("%.2f", m.rate/b.rate)
			}
			return "-"
		}
		added := func(d time.Duration, of func(med) time.Duration) string {
			if b, ok := meds[group+"/direct/"]; ok {
				return fmt.Sprintf("%+.2f", float64(d-of(b))/float64(time.Millisecond))
			}
			return "-"
		}
		rss, idle := l.rss, "-"
		if rss == "" {
			rss = "-"
		}
		if len(l.idle) > 0 {
			idle = fmt.Sprintf("%.0f KiB", median(l.idle)/1024)
		}
		fmt.Printf("%-54s %8.0f %7.0f–%-7.0f %8s %8s %8.2f %8.2f %9s %9s %8.0f %10s %12s\n", l.name, m.rate, slices.Min(rates), slices.Max(rates),
			ratio("direct"), ratio("proxy"), float64(m.p50)/float64(time.Millisecond), float64(m.p99)/float64(time.Millisecond),
			added(m.p50, func(x med) time.Duration { return x.p50 }), added(m.p99, func(x med) time.Duration { return x.p99 }), m.cpu, rss, idle)
		if l.callers > 1 {
			many[fmt.Sprint(l.bin, l.exchange, l.identities > 1)] = m.rate
		}
	}
	fmt.Println()
	// Each caller with sessions of its own, against one caller's.
	for _, l := range lines {
		if l.callers > 1 && l.identities > 1 {
			if one, ok := many[fmt.Sprint(l.bin, l.exchange, false)]; ok {
				fmt.Printf("%s: %.2f× the calls/s of one caller\n", l.name, many[fmt.Sprint(l.bin, l.exchange, true)]/one)
			}
		}
	}
}

// unanswered is an error naming the first line that answered no call in a
// round: its calls/s would be 0, an error and not a ratio.
func unanswered(lines []*relayLine) error {
	for _, l := range lines {
		if len(l.results) == 0 {
			return fmt.Errorf("%s %s: not measured", l.group(), l.name)
		}
		for i, m := range l.results {
			if m.calls == 0 || m.rate <= 0 {
				return fmt.Errorf("%s %s: answered no call in round %d (%d calls, %.0f calls/s)", l.group(), l.name, i+1, m.calls, m.rate)
			}
		}
	}
	return nil
}

// drive1 makes one call of spec on cs and fails the run when it fails.
func (b *bench) drive1(ctx context.Context, cs *mcp.ClientSession, spec callSpec) {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: spec.tool, Arguments: spec.args})
	switch {
	case err != nil:
		fatal(fmt.Errorf("%s: %w", b.current, err))
	case res.IsError || len(res.Content) != 1:
		fatal(fmt.Errorf("%s: %s answered %+v", b.current, spec.tool, res))
	}
}

// rssBytes is process pid's resident memory (VmRSS) in bytes.
func rssBytes(pid int) int64 {
	f := strings.Fields(procStatus(pid, "VmRSS"))
	if len(f) != 2 || f[1] != "kB" {
		fatal(fmt.Errorf("/proc/%d/status: VmRSS %q", pid, f))
	}
	n, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		fatal(err)
	}
	return n << 10
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
