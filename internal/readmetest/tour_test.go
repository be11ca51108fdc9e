package readmetest

import (
	"context"
	"fmt"
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

	"github.com/toolgate/toolgate/internal/mcptest"
	"github.com/toolgate/toolgate/internal/proctest"
)

// The tour is run as the README writes it. Its ```sh blocks are read with
// these conventions, which a README edit must keep:
//
//   - `go build -o NAME ./cmd/toolgate` builds the binary (into the tour's
//     working directory, which holds copies of example/, rego/ and
//     policy-tests/, so that relative paths work as in a checkout).
//   - `./toolgate serve ...` without --stdio starts a server in the
//     background, on a free loopback port instead of 127.0.0.1:8787; every
//     later "127.0.0.1:8787" means that server. Starting another stops it.
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

// addrPlaceholder is the address the README's commands use.
const addrPlaceholder = "127.0.0.1:8787"

// step is one thing the tour does.
type step struct {
	kind  string // "shell", "build", "serve", "edit"
	text  string // the script, the command line, or the edited file
	line  int    // README line
	prose string // for "edit": the text before the block
	// output is what the README shows under the commands: one entry per
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
	env             []string
	addr            string // the running server's address
	server          *server
	logf            func(string, ...any)
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
	tr := &tour{root: root, work: t.TempDir(), tmp: t.TempDir(), logf: t.Logf}
	for _, d := range []string{"example", "rego", "policy-tests"} {
		require.NoError(t, os.CopyFS(filepath.Join(tr.work, d), os.DirFS(filepath.Join(root, d))))
	}
	// Nothing outside the test's directories: the default SQLite ledger
	// lives in the state directory.
	tr.env = append(os.Environ(), "XDG_STATE_HOME="+filepath.Join(tr.tmp, "state"), "HOME="+tr.tmp, "EDITOR=false")
	t.Cleanup(tr.stop)
	return tr
}

// subst rewrites what the README says for what the test uses.
func (tr *tour) subst(s string) string {
	s = strings.ReplaceAll(s, "/tmp/", tr.tmp+"/")
	if tr.addr != "" {
		s = strings.ReplaceAll(s, addrPlaceholder, tr.addr)
	}
	return s
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
// README line.
func (tr *tour) run(ctx context.Context, steps []step) error {
	for _, s := range steps {
		first, _, _ := strings.Cut(s.text, "\n")
		tr.logf("README.md:%d: %s: %s", s.line, s.kind, first)
		var err error
		switch s.kind {
		case "build":
			err = tr.build(ctx, s)
		case "serve":
			err = tr.serve(ctx, s)
		case "edit":
			err = tr.edit(ctx, s)
		default:
			err = tr.shell(ctx, s)
		}
		if err != nil {
			return fmt.Errorf("README.md:%d: %w", s.line, err)
		}
	}
	return nil
}

var (
	buildMu    sync.Mutex
	buildCache = map[string]string{} // name and arguments → binary built
)

// build runs the README's `go build -o NAME PKG` in the checkout, with the
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
// same name and arguments, and returns the binary.
func goBuild(ctx context.Context, root, name string, args ...string) (string, error) {
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
			return fmt.Errorf("output %d of\n%s\ndoes not match the README:\n%s\n(as %s)\ngot:\n%s", i+1, s.text, s.output[i], re, parts[i])
		}
	}
	return nil
}

// serve starts `toolgate serve` in the background on a free port, waits
// until it says where it serves, and matches its output comments.
func (tr *tour) serve(ctx context.Context, s step) error {
	tr.stop()
	line := tr.subst(s.text)
	line = strings.Replace(line, "./toolgate serve", "exec ./toolgate serve --http 127.0.0.1:0", 1)
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
	tr.addr = at.FindStringSubmatch(srv.stderr.String())[1]
	if len(s.output) > 0 {
		re := expectation(tr.subst(strings.Join(s.output, "\n")))
		if err := srv.wait(ctx, re.MatchString); err != nil {
			return fmt.Errorf("%s: its output does not match the README (%s): %w", s.text, re, err)
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

// stop ends the background server, if any.
func (tr *tour) stop() {
	if tr.server == nil {
		return
	}
	_ = tr.server.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-tr.server.exited:
	case <-time.After(time.Minute): // a failure bound only
		_ = tr.server.cmd.Process.Kill()
		<-tr.server.exited
	}
	tr.server, tr.addr = nil, ""
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
		return fmt.Errorf("connect with the token the README names: %w", err)
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

// tourTimeout bounds the whole tour: a failure bound, not a measurement.
const tourTimeout = 5 * time.Minute

// tourBlocks are the blocks of the README's tour section.
func tourBlocks(t *testing.T, blocks []block) []block {
	t.Helper()
	var out []block
	for _, b := range blocks {
		if strings.HasPrefix(b.section, "A ten-minute tour") {
			out = append(out, b)
		}
	}
	require.NotEmpty(t, out, `no "## A ten-minute tour" section with code blocks in the README`)
	return out
}

// TestReadmeTour runs the README's tour against the binary it builds.
func TestReadmeTour(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	requireTools(t)
	root := checkout(t)
	steps, err := tourSteps(tourBlocks(t, readmeBlocks(t, root)))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), tourTimeout)
	defer cancel()
	tr := newTour(t, root)
	require.NoError(t, tr.run(ctx, steps))
}

// requireTools fails (in CI) or skips when the tour's shell tools are
// missing.
func requireTools(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"bash", "curl", "awk", "sha256sum"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("the README's tour needs %s", tool)
			}
			t.Skipf("the README's tour needs %s", tool)
		}
	}
}

// TestTourFails: the tour check bites. A command the binary refuses, an
// output that is not what the README shows, a served answer that differs,
// and an edit the policy does not allow each fail the run, naming the
// README line.
func TestTourFails(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	requireTools(t)
	root := checkout(t)
	build := "```sh\ngo build -o toolgate ./cmd/toolgate\n```\n\n"
	serve := "```sh\n./toolgate serve\n# toolgate: serving MCP (streamable HTTP) at http://127.0.0.1:8787/mcp\n```\n\n"
	curl := `curl -s -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' ` +
		`-H 'Authorization: Bearer toolgate-demo-admin' -H 'Mcp-Protocol-Version: 2026-07-28' ` +
		`-H 'Mcp-Method: tools/call' -H 'Mcp-Name: echo' http://127.0.0.1:8787/mcp -d '{"jsonrpc":"2.0","id":1,` +
		`"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}'`
	for name, c := range map[string]struct{ md, want string }{
		"unknown flag": {build + "```sh\n./toolgate explain --as max --frobnicate\n```\n",
			"README.md:6: the commands failed"},
		"wrong output": {build + "```sh\n./toolgate explain --as max --role manager --tool count\n# answer    Error: Unknown tool 'count'.\n```\n",
			"does not match the README"},
		"served answer differs": {build + serve + "```sh\n" + curl + "\n# ... \"text\":\"hello\" ...\n```\n",
			"does not match the README"},
		"edit without its line": {build + serve + "Connect as `Authorization: Bearer toolgate-demo-admin`, delete the line `no such line`:\n\n```sh\n$EDITOR rego/grant.rego\n```\n",
			"has no line `no such line` to delete"},
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
	// The same pieces, told the truth, pass.
	blocks, err := parseBlocks(build + serve + "```sh\n" + curl + "\n# ... \"text\":\"hi\" ...\n```\n")
	require.NoError(t, err)
	steps, err := tourSteps(blocks)
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
