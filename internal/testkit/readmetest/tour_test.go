package readmetest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/testkit/mcptest"
	"github.com/toolgate/toolgate/internal/testkit/oidctest"
	"github.com/toolgate/toolgate/internal/testkit/proctest"
)

// The tour is run as docs/getting-started.md writes it. Its ```sh blocks
// are read with these conventions, which an edit of the page must keep:
//
//   - `go build -o NAME ./cmd/toolgate` builds the binary (into the tour's
//     working directory, which holds copies of example/, rego/ and
//     policy-tests/, and testdata/ of the checkout, so that relative paths
//     work as in a checkout).
//   - `./toolgate serve ...` without --stdio starts a server in the
//     background, on a loopback port the test chose for the whole tour
//     instead of 127.0.0.1:8787: every "127.0.0.1:8787" means that
//     address. Starting another server stops the one running.
//   - A command ending in " &" runs in the background until the tour ends,
//     with its output comments (below) waited for. Each `--port N` of it
//     is a free port the test chose instead, and every later
//     "127.0.0.1:N" means it.
//   - `./scripts/NAME` is a set-up step: the test checks that what it
//     installs is there (skipping, or failing under CI, as the tests that
//     need it do) rather than running it.
//   - `./toolgate serve --stdio ...` is fed the lines that follow it that
//     start with "{" as its standard input.
//   - `$EDITOR FILE` is an edit while a client is connected: the prose before
//     the block names the client's token (`Authorization: Bearer TOKEN`)
//     and the edit ("delete the line `...`"); the client must then get
//     notifications/tools/list_changed and a different listing.
//   - Comment lines directly under a command (no blank line between) are
//     that command's output: "..." and a word cut with "…" stand for any
//     text, white space for any white space. Prose comments go elsewhere.
//   - Everything else runs in bash (set -e, pipefail): a command that fails
//     fails the tour. "/tmp/" is a temporary directory of the test.

// addrPlaceholder is the address the tour's commands use.
const addrPlaceholder = "127.0.0.1:8787"

// step is one thing the tour does.
type step struct {
	kind  string // "shell", "build", "serve", "edit", "background", "setup"
	text  string // the script, the command line, or the edited file
	line  int    // line of the page
	prose string // for "edit": the text before the block
	// output is what the page shows under the commands: one entry per
	// command of a shell step that has output comments, in order (each
	// followed by a mark in the script); the server's output for "serve".
	output []string
}

// tourSteps reads the steps of the ```sh blocks of blocks.
func tourSteps(blocks []block) ([]step, error) {
	var steps []step
	for _, b := range blocks {
		if b.lang != "sh" || b.directive == "skip" {
			continue
		}
		lines := strings.Split(strings.TrimSuffix(b.body, "\n"), "\n")
		var sh *step
		flush := func() {
			if sh != nil {
				steps = append(steps, *sh)
				sh = nil
			}
		}
		shell := func(i int) *step {
			if sh == nil {
				sh = &step{kind: "shell", line: b.line + 1 + i}
			}
			return sh
		}
		for i := 0; i < len(lines); i++ {
			l := lines[i]
			// The output comments directly under line i, if any.
			output := func() []string {
				var out []string
				for i+1 < len(lines) && strings.HasPrefix(lines[i+1], "#") {
					i++
					out = append(out, strings.TrimPrefix(strings.TrimPrefix(lines[i], "#"), " "))
				}
				return out
			}
			switch {
			case strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#"):
				// A blank line, or a prose comment (not under a command).
			case strings.HasPrefix(l, "go build "):
				flush()
				steps = append(steps, step{kind: "build", text: l, line: b.line + 1 + i})
				output()
			case strings.HasPrefix(l, "./toolgate serve") && !strings.Contains(l, "--stdio"):
				flush()
				s := step{kind: "serve", text: l, line: b.line + 1 + i}
				s.output = output()
				steps = append(steps, s)
			case strings.HasPrefix(l, "./scripts/"):
				flush()
				steps = append(steps, step{kind: "setup", text: strings.TrimSpace(l), line: b.line + 1 + i})
				output()
			case strings.HasSuffix(strings.TrimSpace(l), " &"):
				flush()
				s := step{kind: "background", text: strings.TrimSuffix(strings.TrimSpace(l), " &"), line: b.line + 1 + i}
				s.output = output()
				steps = append(steps, s)
			case strings.HasPrefix(l, "$EDITOR "):
				flush()
				steps = append(steps, step{kind: "edit", text: strings.TrimSpace(strings.TrimPrefix(l, "$EDITOR ")), line: b.line + 1 + i, prose: b.prose})
			default:
				s := shell(i)
				s.text += l
				if strings.HasPrefix(l, "./toolgate serve") {
					// --stdio: the JSON lines under it are its input.
					s.text += " <<'README_STDIN'\n"
					for i+1 < len(lines) && strings.HasPrefix(lines[i+1], "{") {
						i++
						s.text += lines[i] + "\n"
					}
					s.text += "README_STDIN"
				}
				s.text += "\n"
				if out := output(); len(out) > 0 {
					s.output = append(s.output, strings.Join(out, "\n"))
					s.text += "printf '\\n" + mark + "\\n'\n"
				}
			}
		}
		flush()
	}
	if len(steps) == 0 {
		return nil, fmt.Errorf("no ```sh steps found")
	}
	return steps, nil
}

// mark separates the outputs of the commands of one shell step.
const mark = "@@readme-output-ends@@"

// tour runs steps in a scratch working directory.
type tour struct {
	root, work, tmp string
	page            string // the page the steps are from, for messages
	env             []string
	addr            string // the address every server of the tour listens at
	server          *server
	background      []*server
	// ports maps the addresses the page names ("127.0.0.1:9000") to the
	// ones the test chose.
	ports map[string]string
	// setup checks a set-up step's work is there (nil: every set-up step
	// fails).
	setup func(script string) error
	logf  func(string, ...any)
}

type server struct {
	cmd    *exec.Cmd
	stderr *proctest.Buffer
	exited chan struct{}
	err    error
}

// newTour prepares a working directory holding what the tour's relative
// paths name.
func newTour(t *testing.T, root string) *tour {
	t.Helper()
	tr := &tour{root: root, page: tourPage, work: t.TempDir(), tmp: t.TempDir(), logf: t.Logf, addr: freeAddr(t), ports: map[string]string{}}
	for _, d := range []string{"example", "rego", "policy-tests"} {
		require.NoError(t, os.CopyFS(filepath.Join(tr.work, d), os.DirFS(filepath.Join(root, d))))
	}
	// testdata/ as in the checkout (the test OpenID provider and its
	// node_modules), not copied.
	require.NoError(t, os.Symlink(filepath.Join(root, "testdata"), filepath.Join(tr.work, "testdata")))
	// Nothing outside the test's directories: the default SQLite ledger
	// lives in the state directory.
	tr.env = append(os.Environ(), "XDG_STATE_HOME="+filepath.Join(tr.tmp, "state"), "HOME="+tr.tmp, "EDITOR=false")
	t.Cleanup(tr.stopAll)
	return tr
}

// subst rewrites what the page says for what the test uses.
func (tr *tour) subst(s string) string {
	s = strings.ReplaceAll(s, "/tmp/", tr.tmp+"/")
	s = strings.ReplaceAll(s, addrPlaceholder, tr.addr)
	for from, to := range tr.ports {
		s = strings.ReplaceAll(s, from, to)
	}
	return s
}

// freeAddr is a loopback address no one listens at now, for a server the
// test starts later.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// expectations compiles the output comments, after substitution.
func (tr *tour) expectations(raw []string) []*regexp.Regexp {
	var out []*regexp.Regexp
	for _, r := range raw {
		out = append(out, expectation(tr.subst(r)))
	}
	return out
}

// run runs the steps in order and returns the first failure, naming its
// line of the page.
func (tr *tour) run(ctx context.Context, steps []step) error {
	for _, s := range steps {
		first, _, _ := strings.Cut(s.text, "\n")
		tr.logf("%s:%d: %s: %s", tr.page, s.line, s.kind, first)
		var err error
		switch s.kind {
		case "build":
			err = tr.build(ctx, s)
		case "serve":
			err = tr.serve(ctx, s)
		case "edit":
			err = tr.edit(ctx, s)
		case "background":
			err = tr.startBackground(ctx, s)
		case "setup":
			err = fmt.Errorf("no set-up step is known to this test: %s", s.text)
			if tr.setup != nil {
				err = tr.setup(s.text)
			}
		default:
			err = tr.shell(ctx, s)
		}
		if err != nil {
			return fmt.Errorf("%s:%d: %w", tr.page, s.line, err)
		}
	}
	return nil
}

var (
	buildMu    sync.Mutex
	buildCache = map[string]string{} // name and arguments → binary built
)

// build runs the page's `go build -o NAME PKG` in the checkout, with the
// output in the working directory. The same command is linked once per
// test process.
func (tr *tour) build(ctx context.Context, s step) error {
	f := strings.Fields(s.text)
	if len(f) < 5 || f[2] != "-o" {
		return fmt.Errorf("want `go build -o NAME ./cmd/toolgate`, got %q", s.text)
	}
	bin, err := goBuild(ctx, tr.root, filepath.Base(f[3]), f[4:]...)
	if err != nil {
		return fmt.Errorf("%s: %w", s.text, err)
	}
	return os.Symlink(bin, filepath.Join(tr.work, f[3]))
}

// goBuild runs `go build -o NAME ARGS...` in root, once per process for the
// same name and arguments, and returns the binary. A lone package of the
// checkout is proctest's build, which every test binary shares.
func goBuild(ctx context.Context, root, name string, args ...string) (string, error) {
	if len(args) == 1 && strings.HasPrefix(args[0], "./") {
		if a, b := filepath.Clean(root), filepath.Clean(proctest.Root); a == b {
			return proctest.Binary(args[0])
		}
	}
	buildMu.Lock()
	defer buildMu.Unlock()
	key := name + "\x00" + strings.Join(args, "\x00")
	if bin, ok := buildCache[key]; ok {
		return bin, nil
	}
	dir, err := os.MkdirTemp("", "readmetest-bin")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, name)
	cmd := exec.CommandContext(ctx, "go", append([]string{"build", "-o", bin}, args...)...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%v\n%s", err, out)
	}
	buildCache[key] = bin
	return bin, nil
}

// shell runs a shell step and matches each command's output comments.
func (tr *tour) shell(ctx context.Context, s step) error {
	script := "set -eo pipefail\nexec 2>&1\n" + tr.subst(s.text)
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir, cmd.Env = tr.work, tr.env
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("the commands failed (%v):\n%s\noutput:\n%s", err, s.text, out)
	}
	parts := strings.Split(string(out), mark)
	for i, re := range tr.expectations(s.output) {
		if !re.MatchString(parts[i]) {
			return fmt.Errorf("output %d of\n%s\ndoes not match the page:\n%s\n(as %s)\ngot:\n%s", i+1, s.text, s.output[i], re, parts[i])
		}
	}
	return nil
}

// serve starts `toolgate serve` in the background at the tour's address,
// waits until it says where it serves, and matches its output comments.
func (tr *tour) serve(ctx context.Context, s step) error {
	tr.stop()
	line := tr.subst(s.text)
	line = strings.Replace(line, "./toolgate serve", "exec ./toolgate serve --http "+tr.addr, 1)
	cmd := exec.Command("bash", "-c", line)
	cmd.Dir, cmd.Env = tr.work, tr.env
	srv := &server{cmd: cmd, stderr: &proctest.Buffer{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = srv.stderr, srv.stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	tr.server = srv
	go func() { srv.err = cmd.Wait(); close(srv.exited) }()
	at := regexp.MustCompile(`serving MCP \(streamable HTTP\) at http://(127\.0\.0\.1:\d+)/mcp`)
	if err := srv.wait(ctx, func(out string) bool { return at.MatchString(out) }); err != nil {
		return fmt.Errorf("%s: %w", s.text, err)
	}
	if got := at.FindStringSubmatch(srv.stderr.String())[1]; got != tr.addr {
		return fmt.Errorf("%s: serves at %s, not at the address it was given, %s", s.text, got, tr.addr)
	}
	if len(s.output) > 0 {
		re := expectation(tr.subst(strings.Join(s.output, "\n")))
		if err := srv.wait(ctx, re.MatchString); err != nil {
			return fmt.Errorf("%s: its output does not match the page (%s): %w", s.text, re, err)
		}
	}
	return nil
}

// wait returns once ok holds for the server's output, or fails when the
// server exits first or ctx ends.
func (srv *server) wait(ctx context.Context, ok func(string) bool) error {
	for {
		changed := srv.stderr.Changed()
		if ok(srv.stderr.String()) {
			return nil
		}
		select {
		case <-changed:
		case <-srv.exited:
			if ok(srv.stderr.String()) {
				return nil
			}
			return fmt.Errorf("the server exited (%v); its output:\n%s", srv.err, srv.stderr.String())
		case <-ctx.Done():
			return fmt.Errorf("%w; the server's output:\n%s", ctx.Err(), srv.stderr.String())
		}
	}
}

// stop ends the running server, if any.
func (tr *tour) stop() {
	if tr.server == nil {
		return
	}
	tr.server.end()
	tr.server = nil
}

// stopAll ends the server and every background command.
func (tr *tour) stopAll() {
	tr.stop()
	for _, b := range tr.background {
		b.end()
	}
	tr.background = nil
}

// end stops a process the tour started and waits for it.
func (srv *server) end() {
	_ = srv.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-srv.exited:
	case <-time.After(time.Minute): // a failure bound only
		_ = srv.cmd.Process.Kill()
		<-srv.exited
	}
}

// startBackground runs a command ending in " &": each --port N of it on a
// free port instead, until the tour ends. It waits for its output
// comments, if any.
func (tr *tour) startBackground(ctx context.Context, s step) error {
	for _, m := range regexp.MustCompile(`--port (\d+)`).FindAllStringSubmatch(s.text, -1) {
		if _, ok := tr.ports["127.0.0.1:"+m[1]]; !ok {
			addr := freeAddrNoT()
			if addr == "" {
				return fmt.Errorf("no free loopback port")
			}
			_, port, _ := net.SplitHostPort(addr)
			tr.ports["127.0.0.1:"+m[1]] = addr
			tr.ports["--port "+m[1]] = "--port " + port
		}
	}
	cmd := exec.Command("bash", "-c", "exec "+tr.subst(s.text))
	cmd.Dir, cmd.Env = tr.work, tr.env
	// Its standard input stays open until it is stopped, as a terminal's.
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	srv := &server{cmd: cmd, stderr: &proctest.Buffer{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = srv.stderr, srv.stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { srv.err = cmd.Wait(); _ = stdin.Close(); close(srv.exited) }()
	tr.background = append(tr.background, srv)
	if len(s.output) > 0 {
		re := expectation(tr.subst(strings.Join(s.output, "\n")))
		if err := srv.wait(ctx, re.MatchString); err != nil {
			return fmt.Errorf("%s: its output does not match the page (%s): %w", s.text, re, err)
		}
	}
	return nil
}

// freeAddrNoT is freeAddr for code without a *testing.T; "" when none.
func freeAddrNoT() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return ""
	}
	defer l.Close()
	return l.Addr().String()
}

// edit is `$EDITOR FILE` while a client is connected: the client the prose
// names connects and lists, the edit the prose names is made, and the
// client must be told that its listing changed, and see a new one.
func (tr *tour) edit(ctx context.Context, s step) error {
	if tr.server == nil {
		return fmt.Errorf("$EDITOR with no server running")
	}
	token := regexp.MustCompile("Authorization: Bearer ([^`\\s]+)").FindStringSubmatch(s.prose)
	del := regexp.MustCompile("delete the line\\s+`([^`]+)`").FindStringSubmatch(s.prose)
	if token == nil || del == nil {
		return fmt.Errorf("the text before `$EDITOR` must name the client (`Authorization: Bearer TOKEN`) and the edit (delete the line `...`)")
	}
	changed := make(chan struct{}, 16)
	client := mcp.NewClient(&mcp.Implementation{Name: "readme-tour", Version: "v0"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default: // one is enough
			}
		},
	})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:   "http://" + tr.addr + "/mcp",
		HTTPClient: &http.Client{Transport: mcptest.Bearer{Token: token[1], Next: http.DefaultTransport}},
	}, nil)
	if err != nil {
		return fmt.Errorf("connect with the token the page names: %w", err)
	}
	defer cs.Close()
	before, err := listNames(ctx, cs)
	if err != nil {
		return err
	}
	path := tr.subst(s.text)
	if !filepath.IsAbs(path) {
		path = filepath.Join(tr.work, path)
	}
	src, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var kept []string
	for _, l := range strings.Split(string(src), "\n") {
		if strings.TrimSpace(l) != del[1] {
			kept = append(kept, l)
		}
	}
	if len(kept) == strings.Count(string(src), "\n")+1 {
		return fmt.Errorf("%s has no line `%s` to delete", s.text, del[1])
	}
	if err := os.WriteFile(path, []byte(strings.Join(kept, "\n")), 0o644); err != nil {
		return err
	}
	select {
	case <-changed:
	case <-ctx.Done():
		return fmt.Errorf("no notifications/tools/list_changed after the edit (%w); server output:\n%s", ctx.Err(), tr.server.stderr.String())
	}
	after, err := listNames(ctx, cs)
	if err != nil {
		return err
	}
	if slices.Equal(before, after) {
		return fmt.Errorf("the listing did not change after the edit: %v", after)
	}
	return nil
}

func listNames(ctx context.Context, cs *mcp.ClientSession) ([]string, error) {
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names, nil
}

// tourTimeout bounds the whole tour: a failure bound, not a measurement
// (under go test -race ./... on two loaded cores the tour has taken five
// minutes).
const tourTimeout = 15 * time.Minute

// tourPage is the page whose tour TestReadmeTour runs.
const tourPage = "docs/getting-started.md"

// tourSections are the numbered sections the tour must have: one each for
// serving, connecting, editing, testing, explain, a signed bundle,
// approvals and identity.
var tourSections = []string{"1. ", "2. ", "3. ", "4. ", "5. ", "6. Ship the policy as a signed bundle", "7. A person approves", "8. Sign in with an identity provider"}

// TestReadmeTour runs the getting-started tour, end to end, against the
// binary it builds. Its identity section runs the test OpenID provider:
// without it installed the test skips there (fails under CI), after every
// earlier section has passed.
func TestReadmeTour(t *testing.T) {
	root := tourCheckout(t)
	blocks := pageBlocks(t, root, tourPage)
	for _, want := range tourSections {
		found := false
		for _, b := range blocks {
			found = found || (strings.HasPrefix(b.section, want) && b.lang == "sh")
		}
		require.True(t, found, "%s has no section %q with commands", tourPage, want)
	}
	steps, err := tourSteps(blocks)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), tourTimeout)
	defer cancel()
	tr := newTour(t, root)
	tr.setup = func(script string) error {
		if script != "./scripts/oidc-setup" {
			return fmt.Errorf("no set-up step %s is known to this test", script)
		}
		oidctest.Require(t) // skips (fails under CI) when it is not installed
		return nil
	}
	require.NoError(t, tr.run(ctx, steps))
}

// quickstartSection is the README's two-minute start.
const quickstartSection = "Two minutes to a governed call"

// TestReadmeQuickstart runs the README's two-minute start as the tour runs
// its page: the installed `toolgate` of the README is the binary built from
// the checkout.
func TestReadmeQuickstart(t *testing.T) {
	root := tourCheckout(t)
	blocks := []block{{lang: "sh", body: "go build -o toolgate ./cmd/toolgate\n", file: "README.md"}}
	for _, b := range pageBlocks(t, root, "README.md") {
		if b.section == quickstartSection && b.lang == "sh" {
			b.body = regexp.MustCompile(`(?m)^toolgate `).ReplaceAllString(b.body, "./toolgate ")
			blocks = append(blocks, b)
		}
	}
	require.Greater(t, len(blocks), 2, "README.md has no %q section with a server and a call", quickstartSection)
	steps, err := tourSteps(blocks)
	require.NoError(t, err)
	kinds := map[string]bool{}
	for _, s := range steps {
		kinds[s.kind] = true
	}
	require.True(t, kinds["serve"] && kinds["shell"], "the quickstart serves and calls")
	ctx, cancel := context.WithTimeout(t.Context(), tourTimeout)
	defer cancel()
	tr := newTour(t, root)
	tr.page = "README.md"
	require.NoError(t, tr.run(ctx, steps))
}

// tourCheckout is the checkout, for a test that builds and runs the
// binary with the tour's shell tools: it skips under -short, and fails
// (in CI) or skips without the tools.
func tourCheckout(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	requireTools(t)
	return checkout(t)
}

// requireTools fails (in CI) or skips when the tour's shell tools are
// missing.
func requireTools(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"bash", "curl", "awk", "sed", "sha256sum", "openssl"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("the getting-started tour needs %s", tool)
			}
			t.Skipf("the getting-started tour needs %s", tool)
		}
	}
}

// TestTourFails: the tour check bites. A command the binary refuses, an
// output that is not what the page shows, a served answer that differs,
// an edit the policy does not allow, a background command's output that
// differs and an unknown set-up step each fail the run, naming the page's
// line.
func TestTourFails(t *testing.T) {
	root := tourCheckout(t)
	build := "```sh\ngo build -o toolgate ./cmd/toolgate\n```\n\n"
	serve := "```sh\n./toolgate serve\n# toolgate: serving MCP (streamable HTTP) at http://127.0.0.1:8787/mcp\n```\n\n"
	curl := `curl -s -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' ` +
		`-H 'Authorization: Bearer toolgate-demo-admin' -H 'Mcp-Protocol-Version: 2026-07-28' ` +
		`-H 'Mcp-Method: tools/call' -H 'Mcp-Name: echo' http://127.0.0.1:8787/mcp -d '{"jsonrpc":"2.0","id":1,` +
		`"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}'`
	for name, c := range map[string]struct{ md, want string }{
		"unknown flag": {build + "```sh\n./toolgate explain --as max --frobnicate\n```\n",
			tourPage + ":6: the commands failed"},
		"wrong output": {build + "```sh\n./toolgate explain --as max --role manager --tool count\n# answer    Error: Unknown tool 'count'.\n```\n",
			"does not match the page"},
		"served answer differs": {build + serve + "```sh\n" + curl + "\n# ... \"text\":\"hello\" ...\n```\n",
			"does not match the page"},
		"edit without its line": {build + serve + "Connect as `Authorization: Bearer toolgate-demo-admin`, delete the line `no such line`:\n\n```sh\n$EDITOR rego/grant.rego\n```\n",
			"has no line `no such line` to delete"},
		"background output differs": {"```sh\nprintf 'hello\\n' &\n# goodbye\n```\n",
			"does not match the page"},
		"unknown set-up step": {"```sh\n./scripts/nosuch-setup\n```\n",
			"no set-up step is known"},
	} {
		t.Run(name, func(t *testing.T) {
			blocks, err := parseBlocks(c.md)
			require.NoError(t, err)
			steps, err := tourSteps(blocks)
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(t.Context(), tourTimeout)
			defer cancel()
			err = newTour(t, root).run(ctx, steps)
			require.Error(t, err)
			require.Contains(t, err.Error(), c.want)
		})
	}
	// A background command's --port is a free port, and the address the
	// page names with it is that port.
	blocks, err := parseBlocks("```sh\nprintf 'listening on 127.0.0.1:9000\\n' --port 9000 &\n# listening on 127.0.0.1:9000\n```\n")
	require.NoError(t, err)
	steps, err := tourSteps(blocks)
	require.NoError(t, err)
	require.Equal(t, "background", steps[0].kind)
	tr := newTour(t, root)
	require.NoError(t, tr.run(t.Context(), steps))
	require.NotEqual(t, "127.0.0.1:9000", tr.ports["127.0.0.1:9000"])
	require.Contains(t, tr.background[0].stderr.String(), "listening on "+tr.ports["127.0.0.1:9000"])
	// The same pieces, told the truth, pass.
	blocks, err = parseBlocks(build + serve + "```sh\n" + curl + "\n# ... \"text\":\"hi\" ...\n```\n")
	require.NoError(t, err)
	steps, err = tourSteps(blocks)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), tourTimeout)
	defer cancel()
	require.NoError(t, newTour(t, root).run(ctx, steps))
}

// TestExpectation pins how the README renders output.
func TestExpectation(t *testing.T) {
	for _, c := range []struct {
		readme, out string
		match       bool
	}{
		{"answer    Error: Unknown tool 'count'.", "x\nanswer    Error: Unknown tool 'count'.\n", true},
		{"answer Error: Unknown tool 'count'.", "answer    Error: Unknown tool 'sleep'.", false},
		{`... "text":"a b" ... "isError":true`, `{"content":[{"text":"a c"}],"isError":true}`, false},
		{`... "text":"a b" ... "isError":true`, `{"text":"a b"}],"isError":true}`, true},
		{"(approval 3f9c…). Call", "(approval 279e8d29). Call", true},
		{"(approval 3f9c…). Call", "(approval 279e8d29) Call", false},
		{"wrapped\n#   line", "wrapped #   line", true},
	} {
		require.Equal(t, c.match, expectation(c.readme).MatchString(c.out), "%q against %q", c.readme, c.out)
	}
}
