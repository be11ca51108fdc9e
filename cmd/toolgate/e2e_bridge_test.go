package main

//lint:file-ignore SA1019 sampling and roots are deprecated from protocol revision 2026-07-28 on; earlier revisions have them, and toolgate bridges them

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/testkit/mcptest"
	"github.com/toolgate/toolgate/internal/testkit/oidctest"
	"github.com/toolgate/toolgate/internal/testkit/proctest"
	"github.com/toolgate/toolgate/mcpadapter"
)

// bridgeRevisions are the client revisions of the bridge tests: the
// go-sdk's default (no server-to-client requests) and the newest before.
var bridgeRevisions = []string{"2026-07-28", "2025-11-25"}

// bridgeGateway serves, through `toolgate serve`, the go-sdk's conformance
// server twice over streamable HTTP: stateful (prefix "sf.": it speaks
// 2025-11-25 and asks its client in requests of its own) and stateless
// ("sl.": it speaks 2026-07-28 and asks in input-required results). Every
// tool is granted to the admin (ann) and the manager (max).
func bridgeGateway(t *testing.T) *served {
	t.Helper()
	bin := everythingServerBin(t)
	start := func(stateless bool) string {
		addr := fmt.Sprintf("127.0.0.1:%d", oidctest.FreePort(t))
		p := proctest.Start(t, "everything-server", exec.Command(bin, "-http", addr, fmt.Sprintf("-stateless=%v", stateless)))
		p.Await(t, p.Stderr, regexp.MustCompile(`listening at`))
		return "http://" + addr + "/mcp"
	}
	sf, sl := start(false), start(true)
	dir := t.TempDir()
	reg := filepath.Join(dir, "registry.yaml")
	require.NoError(t, os.WriteFile(reg, []byte("sections:\n  everything: { roles: [admin, manager] }\ntools: []\n"), 0o600))
	pol := filepath.Join(dir, "rego")
	require.NoError(t, os.MkdirAll(pol, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(pol, "grant.rego"), []byte("package toolgate.grant\n"), 0o600))
	cfg := filepath.Join(dir, "toolgate.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(fmt.Sprintf(`upstreams:
  - { name: sf, url: %q, import: true, section: everything }
  - { name: sl, url: %q, import: true, section: everything }
`, sf, sl)), 0o600))
	return serveHTTP(t, "--config", cfg, "--registry", reg, "--policy", pol, "--tokens", writeTokens(t))
}

// bridgeClient connects as who (its token) at version, with a client
// that answers sampling, elicitation and roots with who's own answers.
func bridgeClient(t *testing.T, s *served, token, who, version string, mrtr bool) *mcp.ClientSession {
	t.Helper()
	opts := &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			text := ""
			if len(req.Params.Messages) > 0 {
				if tc, ok := req.Params.Messages[0].Content.(*mcp.TextContent); ok {
					text = tc.Text
				}
			}
			return &mcp.CreateMessageResult{Role: "assistant", Model: who, Content: &mcp.TextContent{Text: who + ":" + text}}, nil
		},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			switch msg := req.Params.Message; {
			case msg == "What is your name?", strings.HasPrefix(msg, "Step "): // the input-required tools' questions
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": who, "color": "blue-" + who}}, nil
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"username": who + ":" + req.Params.Message}}, nil
		},
	}
	if !mrtr {
		opts.MultiRoundTrip = &mcp.MultiRoundTripOptions{Disabled: true}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "v0"}, opts)
	client.AddRoots(&mcp.Root{URI: "file:///" + who})
	ctx, cancel := context.WithTimeout(t.Context(), callTimeout)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.url, HTTPClient: &http.Client{Transport: mcptest.Bearer{Token: token}}},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// bridgeCases are the tools asked, and what each answers a client (who)
// that answered what it asked: sampling, elicitation and a roots request,
// of the stateful upstream (requests of its own) and of the stateless one
// (input-required results).
func bridgeCases(who, label string) []struct {
	tool string
	args map[string]any
	want string
} {
	return []struct {
		tool string
		args map[string]any
		want string
	}{
		{"sf.test_sampling", map[string]any{"prompt": label}, "LLM response: " + who + ":" + label},
		{"sf.test_elicitation", map[string]any{"message": label}, "Elicitation result: action=accept, content=map[username:" + who + ":" + label + "]"},
		{"sf.test_input_required_result_list_roots", map[string]any{}, "Client exposed 1 root(s): file:///" + who},
		{"sl.test_input_required_result_sampling", map[string]any{}, "Sampling response: " + who + ":What is the capital of France?"},
		{"sl.test_input_required_result_elicitation", map[string]any{}, "Hello, " + who + "!"},
		{"sl.test_input_required_result_list_roots", map[string]any{}, "Client exposed 1 root(s): file:///" + who},
		// Several requests in one round, and several rounds.
		{"sf.test_input_required_result_multiple_inputs", map[string]any{}, who + ":Generate a greeting " + who + " — 1 root(s) visible"},
		{"sl.test_input_required_result_multiple_inputs", map[string]any{}, who + ":Generate a greeting " + who + " — 1 root(s) visible"},
		{"sf.test_input_required_result_multi_round", map[string]any{}, "Multi-round complete: " + who + " likes blue-" + who},
		{"sl.test_input_required_result_multi_round", map[string]any{}, "Multi-round complete: " + who + " likes blue-" + who},
	}
}

// TestE2EBridge (docs/contract.md §19, "Revisions bridged"): a go-sdk
// client at 2026-07-28 and at 2025-11-25, through toolgate, calls tools of
// a stateful (2025-11-25) and a stateless (2026-07-28) upstream that ask
// it to sample, to elicit and for its roots: each is answered with the
// client's answers, whichever revisions the two speak. Two callers with
// 50 concurrent calls each get, every one, their own answers.
func TestE2EBridge(t *testing.T) {
	skipShort(t)
	t.Parallel()
	s := bridgeGateway(t)
	for _, version := range bridgeRevisions {
		t.Run(version, func(t *testing.T) {
			cs := bridgeClient(t, s, adminToken, "ann", version, true)
			for _, c := range bridgeCases("ann", "hi") {
				got := call(t, cs, c.tool, c.args, nil)
				require.Equal(t, ok(c.want), got, c.tool)
			}
		})
	}

	t.Run("two callers, 50 calls each", func(t *testing.T) {
		for _, version := range bridgeRevisions {
			sessions := map[string]*mcp.ClientSession{
				"ann": bridgeClient(t, s, adminToken, "ann", version, true),
				"max": bridgeClient(t, s, managerToken, "max", version, true),
			}
			var wg sync.WaitGroup
			var overShare atomic.Int32
			errs := make(chan error, 200)
			for who, cs := range sessions {
				for i := range 50 {
					wg.Go(func() {
						cases := bridgeCases(who, fmt.Sprintf("%s-%d", who, i))
						c := cases[i%len(cases)]
						ctx, cancel := context.WithTimeout(t.Context(), upstreamBound)
						defer cancel()
						res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
						// A caller holds at most its share of an upstream's
						// sessions (16, docs/relay.md): a call that finds
						// them all held by its other calls is refused at
						// once, and the client calls again.
						for range 50 {
							if err != nil || !refusedOverShare(res) {
								break
							}
							overShare.Add(1)
							res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
						}
						switch {
						case err != nil:
							errs <- fmt.Errorf("%s %s %s: %w", version, who, c.tool, err)
						case res.IsError || len(res.Content) != 1:
							var texts []string
							for _, ct := range res.Content {
								if tc, ok := ct.(*mcp.TextContent); ok {
									texts = append(texts, tc.Text)
								}
							}
							errs <- fmt.Errorf("%s %s %s: isError %v: %q", version, who, c.tool, res.IsError, texts)
						default:
							if got := res.Content[0].(*mcp.TextContent).Text; got != c.want {
								errs <- fmt.Errorf("%s %s %s: got %q, want %q", version, who, c.tool, got, c.want)
							}
						}
					})
				}
			}
			wg.Wait()
			t.Logf("%s: %d calls refused over the caller's share and called again", version, overShare.Load())
			close(errs)
			var all []error
			for err := range errs {
				all = append(all, err)
			}
			require.NoError(t, errors.Join(all...))
		}
	})
}

// refusedOverShare reports whether res is the answer of a call refused
// because its caller's upstream sessions were all in use.
func refusedOverShare(res *mcp.CallToolResult) bool {
	if !res.IsError || len(res.Content) != 1 {
		return false
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	return ok && tc.Text == mcpadapter.AnswerInternal
}

// TestE2EBridgeState (docs/contract.md §19): the requestState of a call
// bridged for a 2026-07-28 client is single use, bound to its caller and
// integrity-protected: replayed, altered, or presented by another caller,
// it is refused with a JSON-RPC error (invalid params), and the call it
// names is not answered by it; the honest retry still is.
func TestE2EBridgeState(t *testing.T) {
	skipShort(t)
	t.Parallel()
	s := bridgeGateway(t)
	ann := bridgeClient(t, s, adminToken, "ann", "2026-07-28", false)
	max := bridgeClient(t, s, managerToken, "max", "2026-07-28", false)
	ctx, cancel := context.WithTimeout(t.Context(), upstreamBound)
	defer cancel()
	params := &mcp.CallToolParams{Name: "sf.test_sampling", Arguments: map[string]any{"prompt": "p"}}

	res, err := ann.CallTool(ctx, params)
	require.NoError(t, err)
	require.Len(t, res.InputRequests, 1, "the upstream's sampling request, as an input request")
	require.True(t, strings.HasPrefix(res.RequestState, "tg1."), res.RequestState)
	var key string
	for k := range res.InputRequests {
		key = k
	}
	answer := mcp.InputResponseMap{key: &mcp.CreateMessageWithToolsResult{Role: "assistant", Model: "m", Content: []mcp.Content{&mcp.TextContent{Text: "A"}}}}
	retry := func(cs *mcp.ClientSession, state string, args any) (*mcp.CallToolResult, error) {
		return cs.CallTool(ctx, &mcp.CallToolParams{Name: params.Name, Arguments: args, InputResponses: answer, RequestState: state})
	}
	invalid := func(t *testing.T, err error) {
		t.Helper()
		var rpcErr *jsonrpc.Error
		require.ErrorAs(t, err, &rpcErr)
		require.Equal(t, int64(jsonrpc.CodeInvalidParams), rpcErr.Code, rpcErr.Message)
	}

	_, err = retry(ann, res.RequestState+"-TAMPERED", params.Arguments)
	invalid(t, err)
	_, err = retry(ann, res.RequestState, map[string]any{"prompt": "other"})
	invalid(t, err) // another call's arguments
	_, err = retry(max, res.RequestState, params.Arguments)
	invalid(t, err) // another caller

	got, err := retry(ann, res.RequestState, params.Arguments)
	require.NoError(t, err)
	require.Equal(t, "LLM response: A", got.Content[0].(*mcp.TextContent).Text)

	_, err = retry(ann, res.RequestState, params.Arguments)
	invalid(t, err) // replayed
}
