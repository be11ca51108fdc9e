// Command benche2e measures toolgate from outside (issue 18): it drives the
// toolgate binary and a bare go-sdk server with the same echo tool over
// stdio and over streamable HTTP with pipelined tools/call requests, and
// prints calls per second for each; then it reports the resident memory of
// a registry of 10 000 rows with 4 096 cached callers. scripts/bench-e2e
// builds the binaries and runs it.
//
//	benche2e -toolgate ./toolgate [-baseline ./toolgate.old] [-rows 1000] [-inflight 8] [-calls 4000]
//	benche2e bare-stdio         # the bare server, on stdin/stdout
//	benche2e bare-http ADDR     # the bare server, streamable HTTP at ADDR/mcp
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
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing/fstest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/demo"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/mcpadapter"
)

// memoised is the bundled example's grant policy: it reads the caller and
// the rows only, so its decisions are memoised per caller.
const memoised = `package toolgate.grant

granted := {t.name |
	some t in input.tools
	t.base
	t.annotations.readOnlyHint == true
	not url_driver(t)
} if {
	"contractor" in input.caller.roles
}

url_driver(t) if t.driver == "url"
`

// readsMeta is the same with an opt-out read from _meta: evaluated per call.
const readsMeta = `package toolgate.grant

granted := {t.name |
	some t in input.tools
	t.base
	t.annotations.readOnlyHint == true
	not url_driver(t)
} if {
	"contractor" in input.caller.roles
	not input.request.meta["festi/all"] == true
}

url_driver(t) if t.driver == "url"
`

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "bare-stdio":
			if err := bareServer().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
				fatal(err)
			}
			return
		case "bare-http":
			s := bareServer()
			h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
			mux := http.NewServeMux()
			mux.Handle("/mcp", h)
			fatal(http.ListenAndServe(os.Args[2], mux))
		}
	}
	toolgate := flag.String("toolgate", "./toolgate", "the toolgate `binary`")
	baseline := flag.String("baseline", "", "another toolgate `binary` (an earlier build) measured on the same lines, next to -toolgate")
	rows := flag.Int("rows", 1000, "registry rows")
	inflight := flag.Int("inflight", 8, "calls in flight")
	calls := flag.Int("calls", 4000, "calls per measurement")
	rssRows := flag.Int("rss-rows", 10000, "registry rows for the memory report")
	rssCallers := flag.Int("rss-callers", engine.DefaultDecisionCacheSize, "callers for the memory report")
	memoryOnly := flag.Bool("memory-only", false, "only the memory report")
	flag.Parse()
	self, err := os.Executable()
	if err != nil {
		fatal(err)
	}
	dir, err := os.MkdirTemp("", "benche2e")
	if err != nil {
		fatal(err)
	}
	defer os.RemoveAll(dir)
	b := &bench{toolgate: *toolgate, baseline: *baseline, self: self, dir: dir, inflight: *inflight, calls: *calls}
	b.setup(*rows)
	if *memoryOnly {
		b.memory(*rssRows, *rssCallers)
		return
	}
	fmt.Printf("rows=%d, %d calls in flight, %d calls per line, GOMAXPROCS=%d\n\n", *rows, *inflight, *calls, runtime.GOMAXPROCS(0))
	fmt.Printf("%-44s %10s %8s\n", "server", "calls/s", "ratio")
	stdio := []struct {
		name string
		args []string
	}{
		{"stdio  bare go-sdk", nil},
		{"stdio  toolgate memoised, defaults", b.serveArgs("memoised", "--stdio", "--as", "cid", "--role", "manager", "--role", "contractor")},
		{"stdio  toolgate reading _meta, defaults", b.serveArgs("meta", "--stdio", "--as", "cid", "--role", "manager", "--role", "contractor")},
	}
	var base float64
	for i, s := range stdio {
		rate := b.stdio(b.toolgate, s.args)
		if i == 0 {
			base = rate
		}
		fmt.Printf("%-44s %10.0f %8.2f\n", s.name, rate, rate/base)
		if s.args != nil && b.baseline != "" {
			rate := b.stdio(b.baseline, s.args)
			fmt.Printf("%-44s %10.0f %8.2f\n", "  baseline", rate, rate/base)
		}
	}
	httpRuns := []struct {
		name string
		args []string
	}{
		{"http   bare go-sdk", nil},
		{"http   toolgate memoised, defaults", b.serveArgs("memoised", "--tokens", b.tokens)},
		{"http   toolgate reading _meta, defaults", b.serveArgs("meta", "--tokens", b.tokens)},
	}
	for i, s := range httpRuns {
		rate := b.http(b.toolgate, s.args)
		if i == 0 {
			base = rate
		}
		fmt.Printf("%-44s %10.0f %8.2f\n", s.name, rate, rate/base)
		if s.args != nil && b.baseline != "" {
			rate := b.http(b.baseline, s.args)
			fmt.Printf("%-44s %10.0f %8.2f\n", "  baseline", rate, rate/base)
		}
	}
	fmt.Println()
	b.memory(*rssRows, *rssCallers)
}

type bench struct {
	toolgate, self, dir string
	baseline            string // -baseline, or ""
	inflight, calls     int
	tokens              string // the tokens file
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
	write("registry.yaml", registry(rows))
	write("memoised/grant.rego", memoised)
	write("meta/grant.rego", readsMeta)
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

// stdio measures one server over stdio: the bare one when args is nil,
// else the toolgate binary bin.
func (b *bench) stdio(bin string, args []string) float64 {
	cmd := exec.Command(b.self, "bare-stdio")
	if args != nil {
		cmd = exec.Command(bin, args...)
	}
	cmd.Env = b.env()
	cmd.Stderr = io.Discard // the audit trail, by default on stderr
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "benche2e", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		fatal(fmt.Errorf("%v: %w", cmd.Args, err))
	}
	defer cs.Close()
	return b.drive(ctx, cs)
}

// http measures one server over streamable HTTP, as stdio does.
func (b *bench) http(bin string, args []string) float64 {
	addr := freeAddr()
	cmd := exec.Command(b.self, "bare-http", addr)
	if args != nil {
		cmd = exec.Command(bin, append(args, "--http", addr)...)
	}
	cmd.Env = b.env()
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	waitListening(addr)
	client := &http.Client{Transport: bearer{http.DefaultTransport}}
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "benche2e", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp", HTTPClient: client}, nil)
	if err != nil {
		fatal(fmt.Errorf("%v: %w", cmd.Args, err))
	}
	defer cs.Close()
	return b.drive(ctx, cs)
}

type bearer struct{ next http.RoundTripper }

func (t bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+token)
	return t.next.RoundTrip(r)
}

// drive calls echo b.calls times, b.inflight at a time, after a warm-up,
// and returns calls per second. Every answer is checked.
func (b *bench) drive(ctx context.Context, cs *mcp.ClientSession) float64 {
	params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello"}, Meta: mcp.Meta{"festi/runId": "r-1"}}
	call := func() error {
		res, err := cs.CallTool(ctx, params)
		switch {
		case err != nil:
			return err
		case len(res.Content) != 1:
			return fmt.Errorf("echo answered %d content items", len(res.Content))
		}
		if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != "hello" || res.IsError {
			return fmt.Errorf("echo answered %+v (isError %t)", res.Content[0], res.IsError)
		}
		return nil
	}
	run := func(n int) time.Duration {
		var next atomic.Int64
		var wg sync.WaitGroup
		var once sync.Once
		var failed error
		start := time.Now()
		for range b.inflight {
			wg.Go(func() {
				for next.Add(1) <= int64(n) {
					if err := call(); err != nil {
						once.Do(func() { failed = err })
						return
					}
				}
			})
		}
		wg.Wait()
		if failed != nil {
			fatal(failed)
		}
		return time.Since(start)
	}
	run(max(b.calls/10, 50))
	return float64(b.calls) / run(b.calls).Seconds()
}

// memory reports the resident memory of the toolgate process serving rows
// rows, and of an engine of rows rows holding callers cached decisions and
// residuals (both caches are bounded by engine.DefaultDecisionCacheSize).
func (b *bench) memory(rows, callers int) {
	if err := os.WriteFile(filepath.Join(b.dir, "registry.yaml"), []byte(registry(rows)), 0o644); err != nil {
		fatal(err)
	}
	for _, p := range []string{"memoised", "meta"} {
		// A loaded machine may need more than the default 250 ms for the
		// first evaluation over 10 000 rows.
		cmd := exec.Command(b.toolgate, b.serveArgs(p, "--stdio", "--eval-timeout", "10s", "--as", "cid", "--role", "manager", "--role", "contractor")...)
		cmd.Env = b.env()
		cmd.Stderr = io.Discard
		ctx := context.Background()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "benche2e", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			fatal(err)
		}
		calls := b.calls
		b.calls = 200
		b.drive(ctx, cs)
		b.calls = calls
		fmt.Printf("toolgate process, %d rows, %s policy, one caller: RSS %s (peak %s)\n", rows, p,
			procStatus(cmd.Process.Pid, "VmRSS"), procStatus(cmd.Process.Pid, "VmHWM"))
		cs.Close()
	}
	for _, p := range []struct{ name, text string }{{"memoised", memoised}, {"meta", readsMeta}} {
		b.engineMemory(rows, callers, p.name, p.text)
	}
}

// engineMemory builds an engine of rows rows in this process and asks it
// for callers distinct callers (all with the same roles), then reports the
// live heap the callers added (after a collection) and the process's RSS.
func (b *bench) engineMemory(rows, callers int, name, policy string) {
	fsys := fstest.MapFS{"registry.yaml": {Data: []byte(registry(rows))}, "policies/grant.rego": {Data: []byte(policy)}}
	ctx := context.Background()
	e, err := engine.New(ctx, engine.Source{FS: fsys, Registry: "registry.yaml", Policies: "policies"}, engine.WithTimeout(time.Minute))
	if err != nil {
		fatal(err)
	}
	rev := e.Current()
	req := engine.Request{Method: engine.MethodCall, Tool: "echo", Arguments: json.RawMessage(`{"text":"hello"}`)}
	if _, err := rev.Grant(ctx, &engine.Caller{Subject: "warm", Roles: []string{"manager", "contractor"}}, req).Allowed("echo"); err != nil {
		fatal(err)
	}
	before := liveHeap()
	for i := range callers {
		c := &engine.Caller{Subject: fmt.Sprintf("caller-%d", i), Roles: []string{"manager", "contractor"}}
		if ok, err := rev.Grant(ctx, c, req).Allowed("echo"); !ok || err != nil {
			fatal(fmt.Errorf("echo is not granted to %s: %v", c.Subject, err))
		}
	}
	after := liveHeap()
	_, why := rev.DecisionMode()
	fmt.Printf("engine in-process, %d rows, %s policy: live heap %.1f MiB with one caller, +%.1f MiB for %d more (%.1f KiB each); RSS %s\n  (%s)\n",
		rows, name, float64(before)/(1<<20), float64(after-before)/(1<<20), callers, float64(after-before)/float64(callers)/1024,
		procStatus(os.Getpid(), "VmRSS"), why)
	runtime.KeepAlive(rev)
	runtime.KeepAlive(e)
}

func liveHeap() uint64 {
	// Twice: the cleanups of one collection may free more in the next.
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
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

// registry is the engine benchmarks' registry of n rows: echo first.
func registry(n int) string {
	var b strings.Builder
	b.WriteString("sections:\n  rewards: { roles: [manager, admin] }\n  reports: { roles: [admin] }\ntools:\n")
	b.WriteString("  - { name: echo, method: demo.echo, arguments: [{ name: text, type: string, required: true }], annotations: { readOnlyHint: true } }\n")
	for i := 1; i < n; i++ {
		section := []string{"", "rewards", "reports"}[i%3]
		fmt.Fprintf(&b, "  - name: tool%d\n    method: demo.echo\n", i)
		if section != "" {
			fmt.Fprintf(&b, "    section: %s\n", section)
		}
		if i%50 == 0 {
			b.WriteString("    driver: url\n")
		}
		fmt.Fprintf(&b, "    arguments: [{ name: text, type: string, required: true }]\n    annotations: { readOnlyHint: %t }\n", i%2 == 0)
	}
	return b.String()
}

// bareServer is a plain go-sdk server whose echo tool runs toolgate's
// demo.echo method: the same tool, ungoverned.
func bareServer() *mcp.Server {
	echo, _ := demo.Methods().Method("demo.echo")
	s := mcp.NewServer(&mcp.Implementation{Name: "bare", Version: "bench"}, nil)
	type args struct {
		Text string `json:"text"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(ctx context.Context, _ *mcp.CallToolRequest, in args) (*mcp.CallToolResult, any, error) {
		text, _ := json.Marshal(in.Text)
		inv, err := echo.Bind([]mcpadapter.Arg{{Name: "text", Value: text}})
		if err != nil {
			return nil, nil, err
		}
		res, err := inv(ctx)
		return res, nil, err
	})
	return s
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
