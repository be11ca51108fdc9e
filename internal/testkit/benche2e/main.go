// Command benche2e measures toolgate from outside: it drives the
// toolgate binary and two go-sdk servers with the same echo tool (a
// minimal one, a raw Server.AddTool handler: the floor; and a typed
// mcp.AddTool one, which validates its arguments) over stdio and over
// streamable HTTP with pipelined tools/call requests, and prints calls per
// second for each; then it reports the resident memory of a registry of
// 10 000 rows with 4 096 cached callers. scripts/bench-e2e builds the
// binaries and runs it.
//
// Every line is measured -rounds times; a round measures each line once,
// in the same order, so that drift (other load on the machine) falls on
// all lines alike. It prints each line's median calls/s and range, and the
// ratio of medians to the minimal server of its group. Over HTTP there is
// a group per protocol revision, the client pinned to it, and each line
// checks the revision its session negotiated: 2025-11-25 (sessions; the
// go-sdk servers' stateful handler) and 2026-07-28 (sessionless; the
// go-sdk servers send it, by its header, to a stateless handler, as
// toolgate does).
//
// With -relay, it measures the relay hop instead (relay.go,
// scripts/bench-relay): an upstream MCP server called directly, through a
// plain reverse proxy and through toolgate.
//
//	benche2e -toolgate ./toolgate [-baseline ./toolgate.old] [-rows 1000] [-inflight 8] [-calls 4000] [-rounds 5] [-only REGEXP]
//	benche2e -toolgate ./toolgate -relay ./everything-server [-baseline ./toolgate.old] [-callers 64] ...
//	benche2e minimal-stdio | bare-stdio      # a go-sdk server, on stdin/stdout
//	benche2e minimal-http | bare-http ADDR   # a go-sdk server, streamable HTTP at ADDR/mcp
//	benche2e proxy ADDR TARGET               # httputil.ReverseProxy at ADDR in front of TARGET
package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing/fstest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/internal/testkit/benchdata"
	"github.com/toolgate/toolgate/toolcall"
)

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "bare-stdio":
			if err := benchdata.BareServer().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
				fatal(err)
			}
			return
		case "bare-http":
			mux := http.NewServeMux()
			mux.Handle("/mcp", benchdata.BareHTTP(benchdata.BareServer()))
			fatal(http.ListenAndServe(os.Args[2], mux))
		case "minimal-stdio":
			if err := benchdata.MinimalServer().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
				fatal(err)
			}
			return
		case "minimal-http":
			mux := http.NewServeMux()
			mux.Handle("/mcp", benchdata.BareHTTP(benchdata.MinimalServer()))
			fatal(http.ListenAndServe(os.Args[2], mux))
		case "proxy":
			proxy(os.Args[2], os.Args[3])
			return
		}
	}
	toolgate := flag.String("toolgate", "./toolgate", "the toolgate `binary`")
	baseline := flag.String("baseline", "", "another toolgate `binary` (an earlier build) measured on the same lines, next to -toolgate")
	baselineLabel := flag.String("baseline-label", "baseline", "what the relay table calls the -baseline lines")
	rows := flag.Int("rows", 1000, "registry rows")
	inflight := flag.Int("inflight", 8, "calls in flight")
	calls := flag.Int("calls", 4000, "calls per measurement")
	rounds := flag.Int("rounds", 5, "measurements of each line (the median is printed)")
	only := flag.String("only", "", "measure only the lines whose name matches this `regexp` (and skip the memory report)")
	rssRows := flag.Int("rss-rows", 10000, "registry rows for the memory report")
	rssCallers := flag.Int("rss-callers", engine.DefaultDecisionCacheSize, "callers for the memory report")
	memoryOnly := flag.Bool("memory-only", false, "only the memory report")
	relay := flag.String("relay", "", "measure the relay table instead, with this `binary` of the go-sdk's conformance server as the upstream")
	callers := flag.Int("callers", 64, "client sessions (and callers) of the relay table's many-caller lines")
	var toolgateEnv envFlag
	flag.Var(&toolgateEnv, "toolgate-env", "a `KEY=VALUE` added to the environment of the toolgate processes only (repeatable; e.g. GOGC=200)")
	var baselineEnv envFlag
	flag.Var(&baselineEnv, "baseline-env", "a `KEY=VALUE` added to the environment of the relay table's -baseline processes instead of -toolgate-env (repeatable); without -baseline, it measures -toolgate again with it (e.g. GOGC=100 next to the binary's default)")
	flag.Parse()
	var filter *regexp.Regexp
	if *only != "" {
		var err error
		if filter, err = regexp.Compile(*only); err != nil {
			fatal(fmt.Errorf("-only: %w", err))
		}
	}
	if *rounds < 1 {
		fatal(errors.New("-rounds must be at least 1"))
	}
	if *calls < 1 {
		fatal(errors.New("-calls must be at least 1"))
	}
	self, err := os.Executable()
	if err != nil {
		fatal(err)
	}
	dir, err := os.MkdirTemp("", "benche2e")
	if err != nil {
		fatal(err)
	}
	defer os.RemoveAll(dir)
	if *baseline == "" && len(baselineEnv) > 0 {
		*baseline = *toolgate
		if *baselineLabel == "baseline" {
			*baselineLabel = baselineEnv.String()
		}
	}
	b := &bench{toolgate: *toolgate, baseline: *baseline, self: self, dir: dir, inflight: *inflight, calls: *calls, toolgateEnv: toolgateEnv, baselineEnv: baselineEnv, relayServer: *relay, baselineLabel: *baselineLabel}
	// The client's connections are kept alive, as many as calls in flight
	// (http.DefaultTransport keeps 2 per host).
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 0, 4*max(*inflight, *callers)
	b.transport = tr
	if b.devNull, err = os.OpenFile(os.DevNull, os.O_WRONLY, 0); err != nil {
		fatal(err)
	}
	b.setup(*rows)
	if *relay != "" {
		b.setupRelay(*callers)
		b.relayTable(b.relayLines(filter, *callers), *rounds)
		return
	}
	if *memoryOnly {
		b.memory(*rssRows, *rssCallers)
		return
	}
	lines := b.lines(filter)
	fmt.Printf("rows=%d, %d calls in flight, %d calls per measurement, %d rounds, GOMAXPROCS=%d\n\n", *rows, *inflight, *calls, *rounds, runtime.GOMAXPROCS(0))
	for round := range *rounds {
		fmt.Fprintf(os.Stderr, "benche2e: round %d of %d\n", round+1, *rounds)
		for _, l := range lines {
			l.results = append(l.results, b.measure(l))
		}
	}
	fmt.Printf("%-40s %-10s %8s %15s %6s %12s %6s\n", "server", "revision", "calls/s", "min–max", "ratio", "CPU µs/call", "ratio")
	type base struct{ rate, cpu float64 }
	bare := map[string]base{} // group → the minimal line's medians
	for _, l := range lines {
		rates := make([]float64, len(l.results))
		cpus := make([]float64, len(l.results))
		for i, m := range l.results {
			rates[i], cpus[i] = m.rate, float64(m.cpu)/float64(time.Microsecond)
		}
		med := base{median(rates), median(cpus)}
		if l.own == "minimal" {
			bare[l.group] = med
		}
		rateRatio, cpuRatio := "-", "-"
		if b, ok := bare[l.group]; ok {
			rateRatio, cpuRatio = fmt.Sprintf("%.2f", med.rate/b.rate), fmt.Sprintf("%.2f", med.cpu/b.cpu)
		}
		fmt.Printf("%-40s %-10s %8.0f %7.0f–%-7.0f %6s %12.0f %6s\n", l.name, l.negotiated, med.rate, slices.Min(rates), slices.Max(rates), rateRatio, med.cpu, cpuRatio)
	}
	if filter == nil {
		fmt.Println()
		b.memory(*rssRows, *rssCallers)
	}
}

// line is one server measured: one of this program's (own: "minimal" or
// "bare"; bin "") or a toolgate binary with args, over stdio or HTTP
// (transport), with a protocol revision the client pins ("": the
// client's default).
type line struct {
	name      string
	group     string // the lines compared with one minimal line
	transport string // "stdio" or "http"
	revision  string
	own       string
	bin       string
	args      []string

	negotiated string // the revision the first session negotiated
	results    []measurement
}

// Protocol revisions of the HTTP lines: the last with sessions, the first
// without.
const (
	revisionSessions    = "2025-11-25"
	revisionSessionless = "2026-07-28"
)

// lines are the lines to measure, in order, each group's minimal line
// first.
func (b *bench) lines(filter *regexp.Regexp) []*line {
	var out []*line
	add := func(l *line) {
		if filter == nil || filter.MatchString(l.name) {
			out = append(out, l)
		}
	}
	group := func(transport, revision string, args func(policy string) []string) {
		prefix := transport
		if revision != "" {
			prefix += " " + revision
		}
		add(&line{name: prefix + " minimal go-sdk", group: prefix, transport: transport, revision: revision, own: "minimal"})
		add(&line{name: prefix + " typed go-sdk", group: prefix, transport: transport, revision: revision, own: "bare"})
		for _, p := range []struct{ dir, what string }{{"memoised", "memoised"}, {"meta", "reading _meta"}} {
			add(&line{name: prefix + " toolgate " + p.what, group: prefix, transport: transport, revision: revision, bin: b.toolgate, args: args(p.dir)})
			if b.baseline != "" {
				add(&line{name: prefix + " baseline " + p.what, group: prefix, transport: transport, revision: revision, bin: b.baseline, args: args(p.dir)})
			}
		}
	}
	stdioArgs := func(policy string, more ...string) []string {
		return b.serveArgs(policy, append([]string{"--stdio", "--as", "cid", "--role", "manager", "--role", "contractor"}, more...)...)
	}
	group("stdio", "", func(policy string) []string { return stdioArgs(policy) })
	// The cost of a shadow candidate (docs/shadow.md): the memoised policy
	// serving, the one reading _meta (decided on every call) as the
	// candidate, off the request path.
	add(&line{name: "stdio toolgate memoised, shadow", group: "stdio", transport: "stdio", bin: b.toolgate,
		args: stdioArgs("memoised", "--shadow-policy", filepath.Join(b.dir, "meta"))})
	for _, rev := range []string{revisionSessions, revisionSessionless} {
		group("http", rev, func(policy string) []string { return b.serveArgs(policy, "--tokens", b.tokens) })
	}
	if len(out) == 0 {
		fatal(errors.New("-only matches no line"))
	}
	return out
}

// measure starts l's server, connects to it, checks the negotiated revision
// and returns calls per second.
func (b *bench) measure(l *line) measurement {
	var cs *mcp.ClientSession
	var pid int
	var stop func()
	if l.transport == "stdio" {
		cs, pid, stop = b.stdio(l.own, l.bin, l.args)
	} else {
		cs, pid, stop = b.http(l.own, l.bin, l.args, l.revision)
	}
	defer stop()
	got := cs.InitializeResult().ProtocolVersion
	switch {
	case l.revision != "" && got != l.revision:
		fatal(fmt.Errorf("%s: the session negotiated protocol revision %s, not %s", l.name, got, l.revision))
	case l.negotiated != "" && got != l.negotiated:
		fatal(fmt.Errorf("%s: the session negotiated protocol revision %s, earlier %s", l.name, got, l.negotiated))
	}
	l.negotiated = got
	b.current = l.name
	return b.drive(context.Background(), []*mcp.ClientSession{cs}, echoCall, pid)
}

func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

type bench struct {
	toolgate, self, dir string
	baseline            string // -baseline, or ""
	baselineLabel       string
	inflight, calls     int
	tokens              string   // the tokens file
	toolgateEnv         []string // -toolgate-env
	baselineEnv         []string // -baseline-env
	// devNull is every server's stderr (the audit trail by default): a
	// file, so that the server writes to it directly. An io.Writer would
	// put a pipe in between, and this process would spend CPU copying the
	// trail on the cores the servers use.
	devNull *os.File
	current string // the line being measured, for errors
	// transport is the clients' HTTP transport.
	transport http.RoundTripper
	// relayServer is the upstream of the relay table (-relay).
	relayServer string
	// jwts are the JWT callers' tokens, tokenURL the token endpoint of
	// their authorization server (relay.go).
	jwts     []string
	tokenURL string
}

// envFlag is a repeatable KEY=VALUE flag.
type envFlag []string

func (e *envFlag) String() string { return strings.Join(*e, " ") }

func (e *envFlag) Set(v string) error {
	if !strings.Contains(v, "=") {
		return fmt.Errorf("%q is not KEY=VALUE", v)
	}
	*e = append(*e, v)
	return nil
}

const token = "bench-token"

// setup writes the registry, both policy directories and a tokens file.
func (b *bench) setup(rows int) {
	write := func(name, text string) {
		p := filepath.Join(b.dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			fatal(err)
		}
	}
	write("registry.yaml", benchdata.Registry(rows, false))
	write("memoised/grant.rego", benchdata.Memoised)
	write("meta/grant.rego", benchdata.ReadsMeta)
	sum := sha256.Sum256([]byte(token))
	tokens, _ := json.Marshal(map[string]any{hex.EncodeToString(sum[:]): map[string]any{"subject": "cid", "roles": []string{"manager", "contractor"}}})
	write("tokens.json", string(tokens))
	b.tokens = filepath.Join(b.dir, "tokens.json")
}

// serveArgs are the arguments of toolgate serve with a policy directory;
// everything else is the binary's default.
func (b *bench) serveArgs(policy string, more ...string) []string {
	return append([]string{"serve", "--registry", filepath.Join(b.dir, "registry.yaml"), "--policy", filepath.Join(b.dir, policy)}, more...)
}

func (b *bench) env() []string {
	return append(os.Environ(), "XDG_STATE_HOME="+filepath.Join(b.dir, "state"))
}

// stdio connects to one server over stdio: this program's own (minimal
// or bare) when bin is "",
// else the toolgate binary bin with args. stop ends the session and the
// server.
func (b *bench) stdio(own, bin string, args []string) (cs *mcp.ClientSession, pid int, stop func()) {
	cmd := exec.Command(b.self, own+"-stdio")
	cmd.Env = b.env()
	if bin != "" {
		cmd = exec.Command(bin, args...)
		cmd.Env = append(b.env(), b.toolgateEnv...)
	}
	cmd.Stderr = b.devNull // the audit trail, by default on stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "benche2e", Version: "1"}, nil).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		fatal(fmt.Errorf("%v: %w", cmd.Args, err))
	}
	return cs, cmd.Process.Pid, func() { _ = cs.Close() }
}

// http connects to one server over streamable HTTP, as stdio does, with
// the client pinned to protocol revision rev.
func (b *bench) http(own, bin string, args []string, rev string) (cs *mcp.ClientSession, pid int, stop func()) {
	addr := freeAddr()
	cmd := exec.Command(b.self, own+"-http", addr)
	cmd.Env = b.env()
	if bin != "" {
		cmd = exec.Command(bin, append(args, "--http", addr)...)
		cmd.Env = append(b.env(), b.toolgateEnv...)
	}
	cmd.Stderr = b.devNull
	if err := cmd.Start(); err != nil {
		fatal(err)
	}
	kill := func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	waitListening(addr)
	client := &http.Client{Transport: bearer{next: b.transport, token: token}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "benche2e", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp", HTTPClient: client}, &mcp.ClientSessionOptions{ProtocolVersion: rev})
	if err != nil {
		kill()
		fatal(fmt.Errorf("%v: %w", cmd.Args, err))
	}
	return cs, cmd.Process.Pid, func() {
		_ = cs.Close()
		kill()
	}
}

type bearer struct {
	next  http.RoundTripper
	token string
}

func (t bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+t.token)
	return t.next.RoundTrip(r)
}

// callSpec is the call a line makes: a tool, its arguments and the text
// its one content item must hold.
type callSpec struct {
	tool string
	args map[string]any
	want string
}

// echoCall is the call of the echo lines.
var echoCall = callSpec{tool: "echo", args: map[string]any{"text": "hello"}, want: "hello"}

// drive calls spec's tool b.calls times, b.inflight at a time (call i on
// sessions[i%len(sessions)]), after a warm-up, and returns calls per
// second, the latency percentiles and the CPU time the server process
// (pid) spent per call. Every answer is checked.
func (b *bench) drive(ctx context.Context, sessions []*mcp.ClientSession, spec callSpec, pid int) measurement {
	call := func(cs *mcp.ClientSession) error {
		// Params of its own for every call: on a 2026-07-28 session the
		// client writes its protocol entries into the params' _meta.
		params := &mcp.CallToolParams{Name: spec.tool, Arguments: spec.args, Meta: mcp.Meta{"festi/runId": "r-1"}}
		res, err := cs.CallTool(ctx, params)
		switch {
		case err != nil:
			return err
		case len(res.Content) != 1:
			return fmt.Errorf("%s answered %d content items", spec.tool, len(res.Content))
		}
		if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != spec.want || res.IsError {
			return fmt.Errorf("%s answered %+v (isError %t)", spec.tool, res.Content[0], res.IsError)
		}
		return nil
	}
	run := func(n int) (time.Duration, []time.Duration) {
		var next atomic.Int64
		var wg sync.WaitGroup
		var once sync.Once
		var failed error
		lat := make([][]time.Duration, b.inflight)
		start := time.Now()
		for w := range b.inflight {
			wg.Go(func() {
				for {
					i := next.Add(1)
					if i > int64(n) {
						return
					}
					t := time.Now()
					if err := call(sessions[int(i)%len(sessions)]); err != nil {
						once.Do(func() { failed = err })
						return
					}
					lat[w] = append(lat[w], time.Since(t))
				}
			})
		}
		wg.Wait()
		if failed != nil {
			fatal(fmt.Errorf("%s: %w", b.current, failed))
		}
		return time.Since(start), slices.Concat(lat...)
	}
	run(max(b.calls/10, 50))
	cpu := cpuTime(pid)
	wall, lat := run(b.calls)
	cpu = cpuTime(pid) - cpu
	if len(lat) == 0 {
		fatal(fmt.Errorf("%s: answered no call", b.current))
	}
	slices.Sort(lat)
	return measurement{calls: len(lat), rate: float64(len(lat)) / wall.Seconds(), cpu: cpu / time.Duration(b.calls),
		p50: lat[len(lat)/2], p99: lat[len(lat)*99/100]}
}

// measurement is one line's result in one round.
type measurement struct {
	calls    int           // calls answered
	rate     float64       // calls per second
	cpu      time.Duration // the server's CPU time (user and system) per call
	p50, p99 time.Duration // latency of one call, as the client saw it
}

// clockTicks is the unit of /proc/PID/stat's CPU times (USER_HZ, 100 on
// Linux for every architecture Go supports there).
const clockTicks = 100

// cpuTime is the CPU time (user and system, every thread) process pid has
// used so far, in 1/clockTicks s steps. It is less disturbed by other load
// on the machine than calls per second.
func cpuTime(pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		fatal(err)
	}
	// The fields after the command (which may hold spaces) in parentheses:
	// utime and stime are the 14th and 15th of the line, the 12th and 13th
	// after it.
	_, rest, ok := strings.Cut(string(data), ") ")
	fields := strings.Fields(rest)
	if !ok || len(fields) < 13 {
		fatal(fmt.Errorf("/proc/%d/stat: unexpected %q", pid, data))
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			fatal(fmt.Errorf("/proc/%d/stat: %w", pid, err))
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks
}

// memory reports the resident memory of the toolgate process serving rows
// rows, and of an engine of rows rows holding callers cached decisions and
// residuals (both caches are bounded by engine.DefaultDecisionCacheSize).
func (b *bench) memory(rows, callers int) {
	if err := os.WriteFile(filepath.Join(b.dir, "registry.yaml"), []byte(benchdata.Registry(rows, false)), 0o644); err != nil {
		fatal(err)
	}
	for _, p := range []string{"memoised", "meta"} {
		// A loaded machine may need more than the default 250 ms for the
		// first evaluation over 10 000 rows.
		cmd := exec.Command(b.toolgate, b.serveArgs(p, "--stdio", "--eval-timeout", "10s", "--as", "cid", "--role", "manager", "--role", "contractor")...)
		cmd.Env = b.env()
		cmd.Stderr = b.devNull
		ctx := context.Background()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "benche2e", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			fatal(err)
		}
		calls := b.calls
		b.calls = 200
		b.drive(ctx, []*mcp.ClientSession{cs}, echoCall, cmd.Process.Pid)
		b.calls = calls
		fmt.Printf("toolgate process, %d rows, %s policy, one caller: RSS %s (peak %s)\n", rows, p,
			procStatus(cmd.Process.Pid, "VmRSS"), procStatus(cmd.Process.Pid, "VmHWM"))
		cs.Close()
	}
	for _, p := range []struct{ name, text string }{{"memoised", benchdata.Memoised}, {"meta", benchdata.ReadsMeta}} {
		b.engineMemory(rows, callers, p.name, p.text)
	}
}

// engineMemory builds an engine of rows rows in this process and asks it
// for callers distinct callers (all with the same roles), then reports the
// live heap the callers added (after a collection) and the process's RSS.
func (b *bench) engineMemory(rows, callers int, name, policy string) {
	fsys := fstest.MapFS{"registry.yaml": {Data: []byte(benchdata.Registry(rows, false))}, "policies/grant.rego": {Data: []byte(policy)}}
	ctx := context.Background()
	e, err := engine.New(ctx, engine.Source{FS: fsys, Registry: "registry.yaml", Policies: "policies"}, engine.WithTimeout(time.Minute))
	if err != nil {
		fatal(err)
	}
	rev := e.Current()
	req := engine.Request{Method: engine.MethodCall, Tool: "echo", Arguments: json.RawMessage(`{"text":"hello"}`)}
	if _, err := rev.Grant(ctx, &toolcall.Caller{Subject: "warm", Roles: []string{"manager", "contractor"}}, req).Allowed("echo"); err != nil {
		fatal(err)
	}
	before := benchdata.LiveHeap()
	for i := range callers {
		c := &toolcall.Caller{Subject: fmt.Sprintf("caller-%d", i), Roles: []string{"manager", "contractor"}}
		if ok, err := rev.Grant(ctx, c, req).Allowed("echo"); !ok || err != nil {
			fatal(fmt.Errorf("echo is not granted to %s: %v", c.Subject, err))
		}
	}
	after := benchdata.LiveHeap()
	_, why := rev.DecisionMode()
	fmt.Printf("engine in-process, %d rows, %s policy: live heap %.1f MiB with one caller, +%.1f MiB for %d more (%.1f KiB each); RSS %s\n  (%s)\n",
		rows, name, float64(before)/(1<<20), float64(after-before)/(1<<20), callers, float64(after-before)/float64(callers)/1024,
		procStatus(os.Getpid(), "VmRSS"), why)
	runtime.KeepAlive(rev)
	runtime.KeepAlive(e)
}

func procStatus(pid int, field string) string {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "?"
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}

func freeAddr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// waitListening waits until addr accepts connections, for at most a minute.
func waitListening(addr string) {
	deadline := time.Now().Add(time.Minute)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			fatal(errors.New("server at " + addr + " did not start"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "benche2e:", err)
	os.Exit(1)
}
