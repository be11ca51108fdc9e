package console_test

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/identity"
	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/server/gateway"
	"github.com/toolgate/toolgate/internal/testkit/gatewaytest"
	"github.com/toolgate/toolgate/internal/testkit/mcptest"
)

var updateDocs = flag.Bool("update-docs", false, "also write the browser tests' screenshots to docs/console/ (docs/console.md's)")

const howToRun = "the console's browser tests need Debian's chromium and playwright-core: run ./scripts/console-setup, then go test ./internal/server/console"

// browser finds chromium, node and the pinned playwright-core; without
// them the test is skipped, except under CI, where it fails.
func browser(t *testing.T) (chromium, node string) {
	t.Helper()
	missing := func(what string) {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is missing (%s); CI is set, so this is a failure", what, howToRun)
		}
		t.Skipf("%s is missing: %s", what, howToRun)
	}
	chromium = os.Getenv("CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	if _, err := os.Stat(chromium); err != nil {
		missing("chromium (" + chromium + ")")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node")
	}
	if _, err := os.Stat("../../../testdata/console/node_modules/playwright-core/package.json"); err != nil {
		missing("playwright-core (testdata/console/node_modules)")
	}
	return chromium, node
}

// artifacts is where screenshots go: $TOOLGATE_ARTIFACTS/console, else a
// temporary directory; it is logged.
func artifacts(t *testing.T) string {
	dir := t.TempDir()
	if a := os.Getenv("TOOLGATE_ARTIFACTS"); a != "" {
		dir = filepath.Join(a, "console")
		require.NoError(t, os.MkdirAll(dir, 0o755))
	}
	t.Logf("console screenshots: %s", dir)
	return dir
}

// driver is testdata/console/run.mjs: one page in a headless chromium,
// commanded one JSON line at a time.
type driver struct {
	t     *testing.T
	in    io.WriteCloser
	out   *bufio.Scanner
	shots string
}

func startDriver(t *testing.T) *driver {
	chromium, node := browser(t)
	cmd := exec.Command(node, "run.mjs")
	cmd.Dir = "../../../testdata/console"
	cmd.Env = append(os.Environ(), "CHROMIUM="+chromium, "STEP_TIMEOUT_MS=90000")
	cmd.Stderr = &testWriter{t: t}
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = in.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	return &driver{t: t, in: in, out: sc, shots: artifacts(t)}
}

// do runs one command and returns its answer; a failed command fails the
// test. A generous bound catches a browser that hangs.
func (d *driver) do(cmd string, args map[string]any) map[string]any {
	d.t.Helper()
	if args == nil {
		args = map[string]any{}
	}
	args["cmd"] = cmd
	line, err := json.Marshal(args)
	require.NoError(d.t, err)
	_, err = d.in.Write(append(line, '\n'))
	require.NoError(d.t, err)
	got := make(chan bool, 1)
	go func() { got <- d.out.Scan() }()
	select {
	case ok := <-got:
		require.True(d.t, ok, "the browser driver ended: %v", d.out.Err())
	case <-time.After(2 * time.Minute):
		d.t.Fatalf("the browser driver did not answer %s", line)
	}
	var ans map[string]any
	require.NoError(d.t, json.Unmarshal(d.out.Bytes(), &ans))
	require.Equal(d.t, true, ans["ok"], "%s: %v", line, ans["error"])
	return ans
}

func (d *driver) screenshot(name string) {
	d.t.Helper()
	p := filepath.Join(d.shots, name+".png")
	d.do("screenshot", map[string]any{"path": p})
	if *updateDocs {
		b, err := os.ReadFile(p)
		require.NoError(d.t, err)
		require.NoError(d.t, os.MkdirAll("../../../docs/console", 0o755))
		require.NoError(d.t, os.WriteFile(filepath.Join("../../../docs/console", name+".png"), b, 0o644))
	}
}

type testWriter struct{ t *testing.T }

func (w *testWriter) Write(p []byte) (int, error) {
	w.t.Logf("browser: %s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// serve runs the gateway on loopback with the given tokens (token →
// subject and roles) until the end of the test and returns its base URL.
func serve(t *testing.T, registry, policy string, tokens map[string]identity.TokenEntry) string {
	t.Helper()
	tokFile := writeTokens(t, tokens)
	return serveWith(t, func(s *config.Serve) { s.Registry, s.Policy, s.Tokens = registry, policy, tokFile })
}

// writeTokens writes a tokens file (docs/contract.md §8) of token → caller.
func writeTokens(t *testing.T, tokens map[string]identity.TokenEntry) string {
	t.Helper()
	return mcptest.WriteTokens(t, t.TempDir(), tokens)
}

// serveWith runs the gateway with the settings set makes, from the
// bundled example with a memory ledger and no watching.
func serveWith(t *testing.T, set func(*config.Serve)) string {
	t.Helper()
	off := false
	cfg := gateway.Config{Serve: config.Serve{HTTP: "127.0.0.1:0", Ledger: "memory", Watch: &off}, Stderr: io.Discard}
	set(&cfg.Serve)
	require.NoError(t, cfg.SetDefaults())
	g := gatewaytest.Serve(t, cfg)
	t.Cleanup(func() { assert.NoError(t, g.Stop()) })
	return "http://" + g.Addr.String()
}

// mcpSession connects an MCP client (the go-sdk) with a bearer token.
func mcpSession(t *testing.T, base, token string) *mcp.ClientSession {
	t.Helper()
	tr := &http.Transport{}
	client := mcp.NewClient(&mcp.Implementation{Name: "console-test", Version: "1"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: base + "/mcp",
		HTTPClient: &http.Client{Transport: mcptest.Bearer{Token: token, Next: tr}}, DisableStandaloneSSE: true}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close(); tr.CloseIdleConnections() })
	return cs
}

func callText(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
	require.NoError(t, err)
	require.Len(t, res.Content, 1)
	tc, ok := res.Content[0].(*mcp.TextContent)
	require.True(t, ok)
	return tc.Text, res.IsError
}

var approvalID = regexp.MustCompile(`\(approval ([0-9a-f]+)\)`)

// signIn opens the console at base and signs in by pasting token.
func (d *driver) signIn(base, token, who string) {
	d.t.Helper()
	d.do("goto", map[string]any{"url": base + "/console/", "view": "signin"})
	d.do("fill", map[string]any{"selector": "#token", "value": token})
	d.do("press", map[string]any{"selector": "#token", "key": "Enter"})
	d.do("waitText", map[string]any{"selector": "#who-name", "text": who})
}

// TestBrowserConsole signs in with a token, explains a hidden cell of the
// bundled example's matrix, approves a contractor's held call in the page
// (the retried call runs once), and sees the calls in the live tail,
// without their argument values.
func TestBrowserConsole(t *testing.T) {
	d := startDriver(t)
	tokens := map[string]identity.TokenEntry{
		"tok-olga": {Subject: "olga", Roles: []string{"admin"}},
		"tok-carl": {Subject: "carl", Roles: []string{"contractor"}},
	}
	bundled := serve(t, "", "", tokens)

	// Sign in by pasting a token: kept in the tab's session storage, no cookie.
	d.do("goto", map[string]any{"url": bundled + "/console/", "view": "signin"})
	assert.Equal(t, false, d.do("visible", map[string]any{"selector": "#nav"})["visible"], "no views before signing in")
	assert.Equal(t, false, d.do("visible", map[string]any{"selector": "#signout"})["visible"])
	d.screenshot("signin")
	d.signIn(bundled, "tok-olga", "olga (operator)")
	assert.Equal(t, "tok-olga", d.do("session", map[string]any{"key": "toolgate.console.token"})["value"])
	assert.EqualValues(t, 0, d.do("cookies", nil)["n"])

	// The bundled example's matrix: add the contractor, open a hidden
	// cell with the keyboard; its explanation names the rule.
	d.do("view", map[string]any{"name": "matrix"})
	d.do("fill", map[string]any{"selector": "#caller-subject", "value": "carl"})
	d.do("fill", map[string]any{"selector": "#caller-roles", "value": "contractor"})
	d.do("press", map[string]any{"selector": "#caller-roles", "key": "Enter"})
	callers := filepath.Join(t.TempDir(), "callers.yaml")
	require.NoError(t, os.WriteFile(callers, []byte("- {subject: mia, roles: [manager]}\n"), 0o600))
	d.do("upload", map[string]any{"selector": "#callers-file", "path": callers})
	d.do("waitText", map[string]any{"selector": `#matrix button[data-tool="resetCounter"][data-caller="mia"]`, "text": "hidden (base)"})
	cell := `#matrix button[data-tool="getReward"][data-caller="carl"]`
	d.do("waitText", map[string]any{"selector": cell, "text": "hidden (policy)"})
	d.do("press", map[string]any{"selector": cell, "key": "Enter"})
	d.do("waitText", map[string]any{"selector": "#explain-body", "text": "grant.rego:"})
	explanation := d.do("text", map[string]any{"selector": "#explain-body"})["text"].(string)
	assert.Contains(t, explanation, "the policy's granted set does not name it")
	assert.Contains(t, explanation, "Error: Unknown tool 'getReward'.")
	assert.Regexp(t, `Rules\s*rego/grant\.rego:\d+`, explanation)
	d.screenshot("matrix")
	// Readable at 200% zoom: the page reflows, nothing needs sideways scrolling.
	d.do("viewport", map[string]any{"width": 640, "height": 450})
	assert.EqualValues(t, 0, d.do("overflow", nil)["px"], "the matrix at 200%% zoom scrolls sideways")
	d.screenshot("matrix-zoom200")
	d.do("viewport", map[string]any{"width": 1280, "height": 900})

	d.do("view", map[string]any{"name": "status"})
	d.do("waitText", map[string]any{"selector": "#status", "text": "memoised per caller"})
	d.do("waitText", map[string]any{"selector": "#status", "text": "bundled example"})
	d.screenshot("status")

	// A contractor's call is held (a server with one more rule: the
	// bundled example holds only destructive tools, which contractors do
	// not see); it shows in the approvals view, live.
	base := serve(t, "", contractorPolicy(t), tokens)
	d.signIn(base, "tok-olga", "olga (operator)")
	d.do("view", map[string]any{"name": "approvals"})
	const secret = "marmalade-4417"
	carl := mcpSession(t, base, "tok-carl")
	text, isErr := callText(t, carl, "echo", map[string]any{"text": secret})
	require.True(t, isErr, text)
	m := approvalID.FindStringSubmatch(text)
	require.NotNil(t, m, text)
	id := m[1]
	card := fmt.Sprintf(`#approvals-list li[data-approval="%s"]`, id)
	d.do("waitText", map[string]any{"selector": card, "text": "echo — requested by carl"})
	d.do("waitText", map[string]any{"selector": card, "text": secret}) // approvers decide on the arguments
	d.do("fill", map[string]any{"selector": "#note-" + id, "value": "checked with carl"})
	d.screenshot("approvals")
	d.do("click", map[string]any{"selector": card + ` button[aria-label="Approve echo for carl"]`})
	d.do("waitText", map[string]any{"selector": "#approvals-empty", "text": "Nothing is waiting"})

	// The retried call runs, once: the next identical call is held again.
	text, isErr = callText(t, carl, "echo", map[string]any{"text": secret})
	require.False(t, isErr, text)
	assert.Equal(t, secret, text)
	text, isErr = callText(t, carl, "echo", map[string]any{"text": secret})
	require.True(t, isErr, text)
	m = approvalID.FindStringSubmatch(text)
	require.NotNil(t, m, text)
	assert.NotEqual(t, id, m[1], "an approval is used once")
	_, isErr = callText(t, carl, "add", map[string]any{"a": 2, "b": 3})
	require.False(t, isErr)

	// The live tail shows the calls, never their argument values.
	d.do("view", map[string]any{"name": "activity"})
	d.do("waitText", map[string]any{"selector": "#activity-counts", "text": "held: 2"})
	d.do("waitText", map[string]any{"selector": "#activity-counts", "text": "result: 2"})
	d.do("waitText", map[string]any{"selector": "#activity tbody", "text": "carl"})
	tail := d.do("text", map[string]any{"selector": "#view-activity"})["text"].(string)
	assert.NotContains(t, tail, secret)
	d.screenshot("activity")
	d.do("select", map[string]any{"selector": "#f-outcome", "value": "held"})
	d.do("waitText", map[string]any{"selector": "#activity-counts", "text": "shown: 2"})
	assert.EqualValues(t, 2, d.do("count", map[string]any{"selector": "#activity tbody tr"})["n"])

	assert.Empty(t, d.do("errors", nil)["errors"], "errors in the page")
}

// contractorPolicy is a policy directory: the bundled policies and
// testdata/console/contractor_approval.rego, which holds a contractor's
// echo for an admin's approval (the bundled example holds only destructive
// tools, which contractors do not see).
func contractorPolicy(t *testing.T) string {
	t.Helper()
	policy := bundledPolicies(t)
	extra, err := os.ReadFile("../../../testdata/console/contractor_approval.rego")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(policy, "contractor_approval.rego"), extra, 0o600))
	return policy
}

// TestBrowserConsoleApprover: an approver without the operator role sees
// the approvals view only, gets held calls live, and decides them.
func TestBrowserConsoleApprover(t *testing.T) {
	d := startDriver(t)
	tokens := map[string]identity.TokenEntry{
		"tok-olga": {Subject: "olga", Roles: []string{"admin"}},
		"tok-carl": {Subject: "carl", Roles: []string{"contractor"}},
	}
	tokFile := writeTokens(t, tokens)
	policy := contractorPolicy(t)
	base := serveWith(t, func(s *config.Serve) { s.Policy, s.Tokens, s.HTTPServer.AdminRole = policy, tokFile, "ops" })

	d.signIn(base, "tok-olga", "olga")
	d.do("waitSelector", map[string]any{"selector": `body[data-ready="approvals"]`})
	assert.NotContains(t, d.do("text", map[string]any{"selector": "#who-name"})["text"], "operator")
	assert.EqualValues(t, 0, d.do("count", map[string]any{"selector": "nav a[data-operator]:not([hidden])"})["n"])
	assert.Equal(t, false, d.do("visible", map[string]any{"selector": `nav a[data-view="matrix"]`})["visible"])
	assert.Equal(t, true, d.do("visible", map[string]any{"selector": `nav a[data-view="approvals"]`})["visible"])
	d.do("goto", map[string]any{"url": base + "/console/#matrix", "view": "approvals"}) // no matrix for them

	carl := mcpSession(t, base, "tok-carl")
	text, isErr := callText(t, carl, "echo", map[string]any{"text": "hello"})
	require.True(t, isErr, text)
	id := approvalID.FindStringSubmatch(text)[1]
	card := fmt.Sprintf(`#approvals-list li[data-approval="%s"]`, id)
	d.do("waitText", map[string]any{"selector": card, "text": "echo — requested by carl"})
	d.do("click", map[string]any{"selector": card + ` button[aria-label="Refuse echo for carl"]`})
	d.do("waitText", map[string]any{"selector": "#approvals-empty", "text": "Nothing is waiting"})
	text, isErr = callText(t, carl, "echo", map[string]any{"text": "hello"})
	assert.True(t, isErr)
	assert.Equal(t, "Approval "+id+" was refused.", text)
	assert.Empty(t, d.do("errors", nil)["errors"], "errors in the page")
}

// TestBrowserConsoleLargeRegistry measures how long the console's pages
// take to load with a 10 000-row registry (logged, not asserted).
func TestBrowserConsoleLargeRegistry(t *testing.T) {
	d := startDriver(t)
	dir := t.TempDir()
	var reg strings.Builder
	reg.WriteString("sections:\n  rewards: { roles: [manager, admin] }\n  reports: { roles: [admin] }\ntools:\n")
	const rows = 10000
	for i := range rows {
		section := ""
		switch i % 3 {
		case 1:
			section = ", section: rewards"
		case 2:
			section = ", section: reports"
		}
		fmt.Fprintf(&reg, "  - { name: tool%05d, method: demo.echo%s, arguments: [{ name: text, type: string, required: true }], annotations: { readOnlyHint: %t } }\n",
			i, section, i%2 == 0)
	}
	regFile := filepath.Join(dir, "registry.yaml")
	require.NoError(t, os.WriteFile(regFile, []byte(reg.String()), 0o600))
	base := serve(t, regFile, "", map[string]identity.TokenEntry{"tok-olga": {Subject: "olga", Roles: []string{"admin"}}})

	d.signIn(base, "tok-olga", "olga (operator)")
	d.do("waitText", map[string]any{"selector": "#matrix-summary", "text": fmt.Sprintf("of %d", rows)})
	// Each view as a full page load (the token stays in the tab).
	for _, view := range []string{"matrix", "approvals", "activity", "status"} {
		ms := d.do("goto", map[string]any{"url": base + "/console/?reload=" + view + "#" + view, "view": view})["ms"]
		t.Logf("console page load with %d registry rows: %-9s %v ms", rows, view, ms)
	}
	d.do("view", map[string]any{"name": "matrix"})
	// A contractor's column: the policy's override over every row.
	start := time.Now()
	d.do("fill", map[string]any{"selector": "#caller-subject", "value": "carl"})
	d.do("fill", map[string]any{"selector": "#caller-roles", "value": "contractor"})
	d.do("press", map[string]any{"selector": "#caller-roles", "key": "Enter"})
	d.do("waitSelector", map[string]any{"selector": `#matrix button[data-tool="tool00000"][data-caller="carl"]`})
	t.Logf("console matrix with a contractor's column added, %d rows: %v", rows, time.Since(start).Round(time.Millisecond))
	start = time.Now()
	d.do("fill", map[string]any{"selector": "#matrix-q", "value": "tool09999"})
	d.do("waitText", map[string]any{"selector": "#matrix-summary", "text": "tools 1–1 of 1"})
	t.Logf("console matrix search over %d rows: %v (with the 200 ms typing pause)", rows, time.Since(start).Round(time.Millisecond))
	assert.EqualValues(t, 1, d.do("count", map[string]any{"selector": "#matrix tbody tr"})["n"])
	assert.Empty(t, d.do("errors", nil)["errors"], "errors in the page")
}

// TestBrowserApprovalShowsTheExactCall: the approval page shows the
// arguments that will run: an integer beyond a float64's precision with
// all its digits, a right-to-left override as a visible escape (not
// reordering the digits after it), and a long value whole.
func TestBrowserApprovalShowsTheExactCall(t *testing.T) {
	d := startDriver(t)
	dir := t.TempDir()
	reg := filepath.Join(dir, "registry.yaml")
	require.NoError(t, os.WriteFile(reg, []byte("tools:\n  - { name: pay, method: demo.echo, arguments: [{ name: text, type: string, required: true }, { name: amount, type: int, required: true }] }\n"), 0o600))
	policy := filepath.Join(dir, "policy")
	require.NoError(t, os.MkdirAll(policy, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(policy, "pay.rego"), []byte(`package toolgate.call

approval := {"reason": "payments need an approval", "approvers": ["admin"]} if input.tool.name == "pay"
`), 0o600))
	tokens := writeTokens(t, map[string]identity.TokenEntry{
		"tok-olga": {Subject: "olga", Roles: []string{"admin"}},
		"tok-carl": {Subject: "carl", Roles: []string{"contractor"}},
	})
	base := serveWith(t, func(s *config.Serve) { s.Registry, s.Policy, s.Tokens = reg, policy, tokens })

	carl := mcpSession(t, base, "tok-carl")
	long := strings.Repeat("0123456789", 300) + "END"
	var amount json.Number = "9007199254740993"
	text, isErr := callText(t, carl, "pay", map[string]any{"text": "1234\u202e5678 " + long, "amount": amount})
	require.True(t, isErr, text)
	m := approvalID.FindStringSubmatch(text)
	require.NotNil(t, m, text)
	card := fmt.Sprintf(`#approvals-list li[data-approval="%s"]`, m[1])

	d.signIn(base, "tok-olga", "olga (operator)")
	d.do("view", map[string]any{"name": "approvals"})
	d.do("waitText", map[string]any{"selector": card, "text": "pay — requested by carl"})
	shown := d.do("text", map[string]any{"selector": card + " pre"})["text"].(string)
	short := shown[:min(len(shown), 120)]
	assert.True(t, strings.Contains(shown, `"amount": 9007199254740993`), "the exact digits: %q", short)
	assert.True(t, strings.Contains(shown, `"1234\u202e5678 `), "the override as an escape: %q", short)
	assert.False(t, strings.Contains(shown, "\u202e"), "no override left in the page: %q", short)
	assert.True(t, strings.Contains(shown, long+`"`), "the long value is shown whole")
	// What a reader sees: the rendered text (innerText, layout applied)
	// has the digits in order and the escape.
	seen := d.do("innerText", map[string]any{"selector": card + " pre"})["text"].(string)
	assert.True(t, strings.Contains(seen, "9007199254740993"), "rendered: %q", seen[:min(len(seen), 120)])
	assert.True(t, strings.Contains(seen, `1234\u202e5678`), "rendered: %q", seen[:min(len(seen), 120)])
	assert.EqualValues(t, 0, d.do("overflow", nil)["px"], "a long value wraps; the page does not scroll sideways")
	d.screenshot("approval-exact")
	assert.Empty(t, d.do("errors", nil)["errors"], "errors in the page")
}

// TestBrowserConsoleLastViewIsReady: a view chosen while the one before it
// is still loading (a slow matrix, then a click on approvals) is the one
// the page says is ready, also after the slow one has finished.
func TestBrowserConsoleLastViewIsReady(t *testing.T) {
	d := startDriver(t)
	base := serve(t, "", "", map[string]identity.TokenEntry{"tok-olga": {Subject: "olga", Roles: []string{"admin"}}})
	const slow = 1500
	d.do("goto", map[string]any{"url": base + "/console/", "view": "signin"})
	d.do("slow", map[string]any{"suffix": "/console/api/matrix", "ms": slow})
	d.signIn(base, "tok-olga", "olga (operator)") // the matrix is loading
	d.do("view", map[string]any{"name": "approvals"})
	d.do("sleep", map[string]any{"ms": 2 * slow}) // the matrix has answered
	assert.Equal(t, "approvals", d.do("attr", map[string]any{"selector": "body", "name": "data-ready"})["value"])
	assert.Equal(t, "approvals", d.do("attr", map[string]any{"selector": "body", "name": "data-view"})["value"])
	assert.Empty(t, d.do("errors", nil)["errors"])
}
