package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/identity"
	"github.com/toolgate/toolgate/internal/testkit/conformance"
	"github.com/toolgate/toolgate/internal/testkit/mcptest"
	"github.com/toolgate/toolgate/internal/testkit/proctest"
)

// The end-to-end tests run the built binary as a subprocess on loopback and
// drive it with the go-sdk client, as a user's client would.

// The protocol revisions toolgate serves (docs/contract.md §6).
var revisions = []string{"2025-06-18", "2025-11-25", "2026-07-28"}

// exampleTools are the tools of the bundled example, in registry order.
var exampleTools = []string{"echo", "add", "getReward", "price", "fail", "inner", "count", "sleep", "execUrl", "resetCounter"}

const (
	adminToken   = "e2e-admin-token"
	managerToken = "e2e-manager-token"
	// startTimeout bounds how long the binary may take to print its URL.
	startTimeout = 60 * time.Second
	// callTimeout bounds one client request.
	callTimeout = 30 * time.Second
)

func skipShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: builds and runs the toolgate binary; skipped with -short")
	}
}

// writeTokens writes a tokens file with an admin (subject ann) and a
// manager (subject max), and returns its path.
func writeTokens(t *testing.T) string {
	t.Helper()
	return mcptest.WriteTokens(t, t.TempDir(), map[string]identity.TokenEntry{
		adminToken:   {Subject: "ann", Roles: []string{"admin"}},
		managerToken: {Subject: "max", Roles: []string{"manager"}},
	})
}

// served is a `toolgate serve --http` subprocess.
type served struct {
	*proctest.Proc
	url  string // the MCP endpoint, http://ADDR/mcp
	base string // http://ADDR
}

var urlLine = regexp.MustCompile(`toolgate: serving MCP \(streamable HTTP\) at (http://\S+)/mcp\n`)

// serveHTTP starts `toolgate serve --http 127.0.0.1:0` with an in-memory
// ledger, no file watching (args may turn it on), a minute for a policy
// evaluation (the tests compare decisions: the 250 ms default could fail
// one closed on a loaded machine) and args, and waits for the URL it
// prints. The process is killed in t.Cleanup if still running.
func serveHTTP(t *testing.T, args ...string) *served {
	t.Helper()
	full := append([]string{"serve", "--http", "127.0.0.1:0", "--ledger", "memory", "--no-watch", "--eval-timeout", "1m",
		"--audit", filepath.Join(t.TempDir(), "audit.jsonl")}, args...)
	cmd := exec.Command(toolgateBinary(t), full...)
	// An upstream subprocess inherits stderr: do not wait on it forever.
	cmd.WaitDelay = 5 * time.Second
	p := proctest.Start(t, "toolgate "+strings.Join(full, " "), cmd)
	s := &served{Proc: p, base: p.Await(t, p.Stdout, urlLine)[1]}
	s.url = s.base + "/mcp"
	return s
}

// connect opens a go-sdk client session to s under protocol revision
// version, with token ("" for none). It is closed in t.Cleanup.
func (s *served) connect(t *testing.T, token, version string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	cs, err := s.dial(t, token, version, opts)
	require.NoError(t, err, "connect under %s", version)
	t.Cleanup(func() { _ = cs.Close() })
	require.Equal(t, version, cs.InitializeResult().ProtocolVersion, "negotiated revision")
	return cs
}

func (s *served) dial(t *testing.T, token, version string, opts *mcp.ClientOptions) (*mcp.ClientSession, error) {
	hc := &http.Client{Transport: http.DefaultTransport}
	if token != "" {
		hc.Transport = mcptest.Bearer{Token: token}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "v0"}, opts)
	ctx, cancel := context.WithTimeout(t.Context(), callTimeout)
	defer cancel()
	return client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.url, HTTPClient: hc},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
}

// toolNames lists the tools the session sees.
func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), callTimeout)
	defer cancel()
	return mcptest.ToolNames(t, ctx, cs)
}

// heldResetCounter is the bundled example's answer to a call of
// resetCounter that waits for an approval (docs/contract.md §13).
var heldResetCounter = regexp.MustCompile(`^Approval required: Tool 'resetCounter' is destructive and needs an admin's approval \(approval ([0-9a-f]{24})\)\. Call again once it is approved\.$`)

// answer is what a tools/call answered: its one text and whether isError.
type answer = mcptest.Answer

func ok(text string) answer      { return answer{Text: text} }
func refused(text string) answer { return answer{Text: text, IsError: true} }

// call makes one tools/call and returns its answer; a JSON-RPC error fails
// the test (docs/contract.md §5: every answer is a CallToolResult).
func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, meta mcp.Meta) answer {
	t.Helper()
	return mcptest.Call(t, callTimeout, cs, name, args, meta)
}

// TestE2EHTTP drives `toolgate serve --http` (the bundled example, a tokens
// file) under each protocol revision: listing, a granted, a hidden and a
// denied call, a named-argument error, nobody.
func TestE2EHTTP(t *testing.T) {
	skipShort(t)
	t.Parallel()
	s := serveHTTP(t, "--tokens", writeTokens(t))
	for _, version := range revisions {
		t.Run(version, func(t *testing.T) {
			admin := s.connect(t, adminToken, version, nil)
			manager := s.connect(t, managerToken, version, nil)
			nobody := s.connect(t, "", version, nil)

			require.Equal(t, exampleTools, toolNames(t, admin), "admin sees every tool")
			require.Equal(t, []string{"echo", "add", "getReward", "price", "fail", "inner", "count", "sleep"}, toolNames(t, manager),
				"manager: the reports section is hidden")
			require.Equal(t, []string{}, toolNames(t, nobody), "nobody sees no tool")
			if version >= "2026-07-28" {
				// Listings differ from caller to caller (docs/contract.md §6).
				ctx, cancel := context.WithTimeout(t.Context(), callTimeout)
				defer cancel()
				res, err := admin.ListTools(ctx, nil)
				require.NoError(t, err)
				require.Equal(t, "private", res.CacheScope, "cacheScope of tools/list")
			}

			for _, tc := range []struct {
				what string
				cs   *mcp.ClientSession
				name string
				args map[string]any
				meta mcp.Meta
				want answer
			}{
				{"granted", admin, "add", map[string]any{"a": 2, "b": 3}, nil, ok("5")},
				{"hidden", manager, "execUrl", map[string]any{"url": "https://example.com/"}, nil, refused("Error: Unknown tool 'execUrl'.")},
				{"no such row", manager, "noSuchTool", nil, nil, refused("Error: Unknown tool 'noSuchTool'.")},
				{"nobody", nobody, "add", map[string]any{"a": 2, "b": 3}, nil, refused("Error: Unknown tool 'add'.")},
				{"missing argument", admin, "getReward", nil, nil, refused("Error: Missing required argument 'idReward'.")},
				{"invalid value", admin, "getReward", map[string]any{"idReward": "seven"}, nil,
					refused("Error: Invalid value for argument 'idReward': expected int.")},
				{"failure inside", admin, "fail", nil, nil, refused("Error: An internal error occurred while executing the tool.")},
			} {
				require.Equal(t, tc.want, call(t, tc.cs, tc.name, tc.args, tc.meta), "%s: %s", tc.what, tc.name)
			}
			// A destructive tool is held for an admin's approval (docs/contract.md §13);
			// a client-written _meta festi/approvedBy approves nothing.
			for _, meta := range []mcp.Meta{nil, {"festi/approvedBy": "bea"}} {
				held := call(t, admin, "resetCounter", map[string]any{"key": "k" + version}, meta)
				require.True(t, held.IsError)
				require.Regexp(t, heldResetCounter, held.Text)
			}
		})
	}

	t.Run("unknown token", func(t *testing.T) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.url,
			strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer not-a-known-token")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
		require.True(t, strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer"), "WWW-Authenticate: %q", resp.Header.Get("WWW-Authenticate"))

		for _, version := range revisions {
			_, err := s.dial(t, "not-a-known-token", version, nil)
			require.Error(t, err, "a client with an unknown token cannot connect under %s", version)
		}
	})

	t.Run("healthz", func(t *testing.T) {
		resp, err := http.Get(s.base + "/healthz")
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		var h struct {
			Status   string `json:"status"`
			Revision uint64 `json:"revision"`
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&h))
		require.Equal(t, "ok", h.Status)
		require.NotZero(t, h.Revision)
	})
}

// TestE2EDemoToken: with no flags but an address, serve prints the demo
// token, and it is an admin.
func TestE2EDemoToken(t *testing.T) {
	skipShort(t)
	t.Parallel()
	s := serveHTTP(t)
	cs := s.connect(t, "toolgate-demo-admin", "2025-11-25", nil)
	require.Equal(t, exampleTools, toolNames(t, cs))
}

// TestE2ESigterm: SIGTERM lets a call in flight finish, then the process
// exits with status 0.
//
// The test knows a call is in flight from the idempotency ledger, not from
// the clock: two identical calls with one key are sent together, and when
// one is answered "already running" the other holds the key, so the server
// has read it and is running it.
func TestE2ESigterm(t *testing.T) {
	skipShort(t)
	t.Parallel()
	s := serveHTTP(t, "--tokens", writeTokens(t))
	cs := s.connect(t, adminToken, "2025-11-25", nil)
	const ms = 2000
	answers := make(chan answer, 2)
	send := func(key string) {
		go func() {
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": ms},
				Meta: mcp.Meta{"festi/idempotencyKey": key}})
			if err != nil || len(res.Content) != 1 {
				answers <- answer{Text: fmt.Sprintf("error %v, result %+v", err, res), IsError: true}
				return
			}
			text, _ := res.Content[0].(*mcp.TextContent)
			answers <- answer{Text: text.Text, IsError: res.IsError}
		}()
	}
	next := func(what string) answer {
		select {
		case a := <-answers:
			return a
		case <-time.After(callTimeout): // a failure bound only
			t.Fatalf("no answer: %s\nstderr:\n%s", what, s.Stderr.String())
			return answer{}
		}
	}
	for try := 0; ; try++ {
		require.Less(t, try, 10, "two calls sent together never overlapped")
		key := fmt.Sprintf("sigterm-%d", try)
		send(key)
		send(key)
		first := next("the first of two calls")
		if first.Text == "This call is already running. Retry once it finished." { // docs/contract.md §10
			break // the other call is in flight
		}
		// One ran to the end before the other arrived (which then got the
		// stored result): nothing is in flight; try again.
		require.Equal(t, ok(fmt.Sprint(ms)), first)
		require.Equal(t, ok(fmt.Sprint(ms)), next("the replayed call"))
	}
	require.NoError(t, s.Cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, ok(fmt.Sprint(ms)), next("the call in flight"), "the call in flight finishes")
	select {
	case <-s.Exited():
		require.NoError(t, s.Err(), "exit status; stderr:\n%s", s.Stderr.String())
		require.Equal(t, 0, s.Cmd.ProcessState.ExitCode())
	case <-time.After(callTimeout):
		t.Fatalf("toolgate serve did not exit after SIGTERM\nstderr:\n%s", s.Stderr.String())
	}
}

// TestE2EWatch: with --watch, a policy edit reloads, a connected session
// receives notifications/tools/list_changed and its next listing differs.
func TestE2EWatch(t *testing.T) {
	skipShort(t)
	t.Parallel()
	dir := t.TempDir()
	regPath, polDir := writeExample(t, dir, &conformance.Fixture{})
	s := serveHTTP(t, "--registry", regPath, "--policy", polDir, "--tokens", writeTokens(t), "--watch")

	changed := make(chan struct{}, 8)
	cs := s.connect(t, adminToken, "2025-11-25", &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			changed <- struct{}{}
		},
	})
	require.Equal(t, exampleTools, toolNames(t, cs))

	// An override for every signed-in caller: all the base grants but sleep.
	grant := `package toolgate.grant

granted := {t.name | some t in input.tools; t.base; t.name != "sleep"} if input.caller != null

url_drivers_decided := true
`
	require.NoError(t, os.WriteFile(filepath.Join(polDir, "grant.rego"), []byte(grant), 0o644))
	select {
	case <-changed:
	case <-time.After(callTimeout):
		t.Fatalf("no notifications/tools/list_changed after a policy edit\nstderr:\n%s", s.Stderr.String())
	}
	want := []string{"echo", "add", "getReward", "price", "fail", "inner", "count", "execUrl", "resetCounter"}
	require.Equal(t, want, toolNames(t, cs), "the listing after the reload")
	require.Equal(t, refused("Error: Unknown tool 'sleep'."), call(t, cs, "sleep", map[string]any{"ms": 1}, nil))
}

// TestE2EStdio drives `toolgate serve --stdio` with the go-sdk client under
// each protocol revision: the caller comes from --as and --role.
func TestE2EStdio(t *testing.T) {
	skipShort(t)
	t.Parallel()
	connect := func(t *testing.T, version string, caller ...string) *mcp.ClientSession {
		t.Helper()
		args := append([]string{"serve", "--stdio", "--ledger", "memory", "--no-watch",
			"--audit", filepath.Join(t.TempDir(), "audit.jsonl")}, caller...)
		cmd := exec.Command(toolgateBinary(t), args...)
		stderr := &proctest.Buffer{}
		cmd.Stderr = stderr
		client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "v0"}, nil)
		ctx, cancel := context.WithTimeout(t.Context(), startTimeout)
		defer cancel()
		// CommandTransport closes stdin, then terminates and kills the
		// process if it does not exit, when the session closes.
		cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second},
			&mcp.ClientSessionOptions{ProtocolVersion: version})
		require.NoError(t, err, "connect under %s; stderr:\n%s", version, stderr.String())
		t.Cleanup(func() {
			_ = cs.Close()
			if t.Failed() {
				t.Logf("stderr of toolgate %s:\n%s", strings.Join(args, " "), stderr.String())
			}
		})
		require.Equal(t, version, cs.InitializeResult().ProtocolVersion, "negotiated revision")
		return cs
	}
	for _, version := range revisions {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			admin := connect(t, version, "--as", "ann", "--role", "admin")
			manager := connect(t, version, "--as", "max", "--role", "manager")
			nobody := connect(t, version)

			require.Equal(t, exampleTools, toolNames(t, admin))
			require.NotContains(t, toolNames(t, manager), "execUrl")
			require.Equal(t, []string{}, toolNames(t, nobody))
			require.Equal(t, ok("5"), call(t, admin, "add", map[string]any{"a": 2, "b": 3}, nil))
			require.Equal(t, refused("Error: Unknown tool 'execUrl'."), call(t, manager, "execUrl", map[string]any{"url": "https://example.com/"}, nil))
			held := call(t, admin, "resetCounter", map[string]any{"key": "k"}, nil)
			require.True(t, held.IsError)
			require.Regexp(t, heldResetCounter, held.Text)
			require.Equal(t, refused("Error: Missing required argument 'idReward'."), call(t, admin, "getReward", nil, nil))
		})
	}
}
