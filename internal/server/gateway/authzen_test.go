package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/inspect"
	"github.com/toolgate/toolgate/internal/server/gateway"
	"github.com/toolgate/toolgate/internal/testkit/mcptest"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/toolcall"
	"github.com/toolgate/toolgate/upstream"
)

// pdpCallers ask the AuthZEN endpoints: a PEP with the PDP role, one with
// the PDP and the operator role, and one without the PDP role.
var (
	pep      = &toolcall.Caller{Subject: "pep", Roles: []string{"pdp"}}
	pepAdmin = &toolcall.Caller{Subject: "pep-admin", Roles: []string{"pdp", "admin"}}
	notPEP   = &toolcall.Caller{Subject: "max", Roles: []string{"manager"}}
)

// startPDP serves the bundled example with PDP role "pdp" and returns
// the base URL and the gateway (for its revision).
func startPDP(t *testing.T) (string, *gateway.Gateway) {
	t.Helper()
	dir := t.TempDir()
	tokens := writeTokens(t, dir, pep, pepAdmin, notPEP)
	var gw *gateway.Gateway
	g := startGateway(t, gateway.Config{
		Serve:  config.Serve{Tokens: tokens, Ledger: "memory", Audit: filepath.Join(dir, "audit.jsonl"), PDPRoles: []string{"pdp"}},
		Routes: func(g *gateway.Gateway) map[string]http.Handler { gw = g; return nil },
	})
	return strings.TrimSuffix(g.url, "/mcp"), gw
}

// post sends body to base+path as caller (nil: no token) and returns the
// status and body.
func azPost(t *testing.T, base, path string, caller *toolcall.Caller, body string) (int, string) {
	t.Helper()
	token := ""
	if caller != nil {
		token = tokenFor(caller)
	}
	status, b := mcptest.Do(t, t.Context(), http.MethodPost, base+path, token, body, "Content-Type", "application/json")
	return status, string(b)
}

// requireBatch asks the evaluations of batch in one request as pep and
// requires the decisions want, in order.
func requireBatch(t *testing.T, base string, pep *toolcall.Caller, batch []json.RawMessage, want []bool) {
	t.Helper()
	b, err := json.Marshal(map[string]any{"evaluations": batch})
	require.NoError(t, err)
	status, body := azPost(t, base, "/access/v1/evaluations", pep, string(b))
	require.Equal(t, http.StatusOK, status, body)
	var out struct {
		Evaluations []azDecision `json:"evaluations"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &out))
	require.Len(t, out.Evaluations, len(want))
	for i, d := range out.Evaluations {
		require.Equal(t, want[i], *d.Decision, "evaluation %d", i)
	}
}

type azDecision struct {
	Decision *bool          `json:"decision"`
	Context  map[string]any `json:"context"`
}

func evalRequest(subject *toolcall.Caller, action, tool string, args string) string {
	props := map[string]any{"roles": subject.Roles}
	if subject.Claims != nil {
		props["claims"] = subject.Claims
	}
	res := map[string]any{"type": "mcp_tool", "id": tool}
	if args != "" {
		res["properties"] = map[string]any{"arguments": json.RawMessage(args)}
	}
	b, _ := json.Marshal(map[string]any{
		"subject":  map[string]any{"type": "user", "id": subject.Subject, "properties": props},
		"action":   map[string]any{"name": action},
		"resource": res,
	})
	return string(b)
}

// TestAuthZENDecisionsEqualExplain: for a table of callers and tools (every
// row of the bundled example and a name no row has), the AuthZEN decision
// of tools/call is true exactly when `toolgate explain --tool` says the
// call runs (stage run), with and without arguments, and the decision of
// tools/list exactly when explain lists the tool; the Access Evaluations
// batch answers the same, in order.
func TestAuthZENDecisionsEqualExplain(t *testing.T) {
	t.Parallel()
	base, gw := startPDP(t)
	rev := gw.Engine().Current()
	var tools []string
	for _, r := range rev.Registry().Tools {
		tools = append(tools, r.Name)
	}
	tools = append(tools, "noRowHasThisName")
	subjects := append([]*toolcall.Caller{{Subject: "nora", Roles: []string{}}, {Subject: "root", Roles: []string{"admin"}}}, httpCallers...)
	args := map[string]string{"echo": `{"text":"hi"}`, "add": `{"a":1}`, "getReward": `{"idReward":"x"}`, "count": `{"key":"k"}`}
	var batch []json.RawMessage
	var want []bool
	sawTrue, sawFalse := false, false
	for _, s := range subjects {
		for _, tool := range tools {
			for _, a := range []string{"", args[tool]} {
				x := inspect.Explain(context.Background(), inspect.ExplainOptions{Revision: rev, Caller: s, Tool: tool,
					Arguments: json.RawMessage(a), Methods: gateway.BuiltinMethods()})
				wantCall := x.Call.Stage == inspect.StageRun
				status, body := azPost(t, base, "/access/v1/evaluation", pep, evalRequest(s, "tools/call", tool, a))
				require.Equal(t, http.StatusOK, status, body)
				var d azDecision
				require.NoError(t, json.Unmarshal([]byte(body), &d))
				require.NotNil(t, d.Decision, body)
				require.Equal(t, wantCall, *d.Decision, "tools/call %s by %s args %s: explain says stage %s", tool, s.Subject, a, x.Call.Stage)
				batch = append(batch, json.RawMessage(evalRequest(s, "tools/call", tool, a)))
				want = append(want, wantCall)
				sawTrue, sawFalse = sawTrue || wantCall, sawFalse || !wantCall
			}
			x := inspect.Explain(context.Background(), inspect.ExplainOptions{Revision: rev, Caller: s})
			wantList := false
			for _, n := range x.Listed {
				wantList = wantList || n == tool
			}
			status, body := azPost(t, base, "/access/v1/evaluation", pep, evalRequest(s, "tools/list", tool, ""))
			require.Equal(t, http.StatusOK, status, body)
			var d azDecision
			require.NoError(t, json.Unmarshal([]byte(body), &d))
			require.Equal(t, wantList, *d.Decision, "tools/list %s for %s", tool, s.Subject)
			batch = append(batch, json.RawMessage(evalRequest(s, "tools/list", tool, "")))
			want = append(want, wantList)
		}
	}
	require.True(t, sawTrue && sawFalse, "the table must hold both decisions")
	requireBatch(t, base, pep, batch, want)
}

// TestAuthZENHiddenIsAbsent: a tool hidden from the subject and a name no
// row has get byte-identical answers, with no reason, unless the asking
// caller holds the operator role (then the reason says which).
func TestAuthZENHiddenIsAbsent(t *testing.T) {
	t.Parallel()
	base, _ := startPDP(t)
	nora := &toolcall.Caller{Subject: "nora", Roles: []string{}}
	for _, action := range []string{"tools/call", "tools/list"} {
		_, hidden := azPost(t, base, "/access/v1/evaluation", pep, evalRequest(nora, action, "getReward", ""))
		_, absent := azPost(t, base, "/access/v1/evaluation", pep, evalRequest(nora, action, "getRewardd", ""))
		require.Equal(t, absent, strings.Replace(hidden, "getReward", "getRewardd", -1), action)
		require.JSONEq(t, `{"decision":false}`, hidden, action)
	}
	_, hidden := azPost(t, base, "/access/v1/evaluation", pepAdmin, evalRequest(nora, "tools/call", "getReward", ""))
	_, absent := azPost(t, base, "/access/v1/evaluation", pepAdmin, evalRequest(nora, "tools/call", "getRewardd", ""))
	require.Contains(t, hidden, "the base decision: section rewards lists only manager, admin")
	require.Contains(t, absent, "no row has this name")
}

// TestAuthZENAuth: only a caller with a PDP role may ask; the others get
// 401 (no or an unknown token) or 403, on both endpoints.
func TestAuthZENAuth(t *testing.T) {
	t.Parallel()
	base, _ := startPDP(t)
	body := evalRequest(&toolcall.Caller{Subject: "max", Roles: []string{"manager"}}, "tools/call", "echo", "")
	for _, path := range []string{"/access/v1/evaluation", "/access/v1/evaluations"} {
		status, _ := azPost(t, base, path, nil, body)
		require.Equal(t, http.StatusUnauthorized, status, path)
		status, _ = azPost(t, base, path, &toolcall.Caller{Subject: "stranger"}, body)
		require.Equal(t, http.StatusUnauthorized, status, path)
		status, _ = azPost(t, base, path, notPEP, body)
		require.Equal(t, http.StatusForbidden, status, path)
		status, _ = azPost(t, base, path, pep, body)
		require.Equal(t, http.StatusOK, status, path)
	}
	// The refusal comes before the body is read: garbage is 401, not 400.
	status, _ := azPost(t, base, "/access/v1/evaluation", nil, "{not json")
	require.Equal(t, http.StatusUnauthorized, status)
	status, _ = azPost(t, base, "/access/v1/evaluation", pep, "{not json")
	require.Equal(t, http.StatusBadRequest, status)
}

// TestAuthZENSpecExamples sends the Authorization API 1.0 specification's
// own example requests (§6.1.1, §7.1.2): they parse and are answered in
// the spec's shape; their actions (can_read) are no MCP method, so the
// decisions are false with an error context. The metadata (§9) names the
// endpoints under the URL it was fetched from.
func TestAuthZENSpecExamples(t *testing.T) {
	t.Parallel()
	base, _ := startPDP(t)
	single := `{
  "subject": {"type": "user", "id": "alice@example.com"},
  "resource": {"type": "account", "id": "123"},
  "action": {"name": "can_read", "properties": {"method": "GET"}},
  "context": {"time": "1985-10-26T01:22-07:00"}
}`
	status, body := azPost(t, base, "/access/v1/evaluation", pep, single)
	require.Equal(t, http.StatusOK, status, body)
	var d azDecision
	require.NoError(t, json.Unmarshal([]byte(body), &d))
	require.False(t, *d.Decision)
	require.Contains(t, d.Context, "error")

	batch := `{
  "subject": {"type": "user", "id": "alice@example.com"},
  "action": {"name": "can_read"},
  "options": {"evaluations_semantic": "execute_all"},
  "evaluations": [
    {"resource": {"type": "document", "id": "1"}},
    {"resource": {"type": "document", "id": "2"}},
    {"resource": {"type": "document", "id": "3"}}
  ]
}`
	status, body = azPost(t, base, "/access/v1/evaluations", pep, batch)
	require.Equal(t, http.StatusOK, status, body)
	var out struct {
		Evaluations []azDecision `json:"evaluations"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &out))
	require.Len(t, out.Evaluations, 3)
	// deny_on_first_deny stops at the first false.
	status, body = azPost(t, base, "/access/v1/evaluations", pep, strings.Replace(batch, "execute_all", "deny_on_first_deny", 1))
	require.Equal(t, http.StatusOK, status, body)
	require.NoError(t, json.Unmarshal([]byte(body), &out))
	require.Len(t, out.Evaluations, 1)

	resp, err := http.Get(base + "/.well-known/authzen-configuration")
	require.NoError(t, err)
	defer resp.Body.Close()
	var meta map[string]string
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&meta))
	require.Equal(t, base, meta["policy_decision_point"])
	require.Equal(t, base+"/access/v1/evaluation", meta["access_evaluation_endpoint"])
	require.Equal(t, base+"/access/v1/evaluations", meta["access_evaluations_endpoint"])
}

// catalogEval is an evaluation request of a prompts/get or resources/read.
func catalogEval(subject *toolcall.Caller, action, typ, id string, args map[string]string) string {
	res := map[string]any{"type": typ, "id": id}
	if args != nil {
		res["properties"] = map[string]any{"arguments": args}
	}
	b, _ := json.Marshal(map[string]any{
		"subject":  map[string]any{"type": "user", "id": subject.Subject, "properties": map[string]any{"roles": subject.Roles}},
		"action":   map[string]any{"name": action},
		"resource": res,
	})
	return string(b)
}

// TestAuthZENCatalogDecisionsEqualServing: serving an importing upstream's
// prompts and resources (the conformance server; the policy hides a prompt,
// a resource and the templated resources from contractors), for a table of
// callers × prompts and resources (hidden, granted, and ones that do not
// exist), the AuthZEN decision of prompts/get and resources/read is true
// exactly when the served method, asked by that caller over MCP, does not
// answer as for what does not exist; prompts/get also equals `toolgate
// explain --prompt`. The batch answers the same in order; hidden and absent
// answer byte for byte alike unless the asker is an operator.
func TestAuthZENCatalogDecisionsEqualServing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ann := &toolcall.Caller{Subject: "ann", Roles: []string{"admin"}}
	carl := &toolcall.Caller{Subject: "carl", Roles: []string{"contractor"}}
	sam := &toolcall.Caller{Subject: "sam", Roles: []string{"viewer"}}
	nora := &toolcall.Caller{Subject: "nora", Roles: []string{}}
	subjects := []*toolcall.Caller{ann, carl, sam, nora}
	reg, pol := writeSource(t, dir, "sections:\n  \"upstream:ev\": { roles: [admin, contractor] }\ntools: []\n", catalogPolicy)
	watch := false
	var gw *gateway.Gateway
	g := startGateway(t, gateway.Config{
		Serve: config.Serve{Registry: reg, Policy: pol, Tokens: writeTokens(t, dir, append([]*toolcall.Caller{pep, pepAdmin}, subjects...)...),
			Upstreams: []upstream.Settings{{Name: "ev", Command: everythingServer(t), Import: true}},
			Ledger:    "memory", Audit: filepath.Join(dir, "audit.jsonl"), Watch: &watch, PDPRoles: []string{"pdp"}},
		Stderr: io.Discard,
		Routes: func(g *gateway.Gateway) map[string]http.Handler { gw = g; return nil },
	})
	base := strings.TrimSuffix(g.url, "/mcp")
	ctx := context.Background()
	prompts := []string{"ev.test_simple_prompt", "ev.test_prompt_with_arguments", "ev.test_prompt_with_embedded_resource",
		"ev.test_prompt_with_image", "ev.test_input_required_result_prompt", "ev.nothing"}
	promptArgs := map[string]map[string]string{"ev.test_prompt_with_arguments": {"arg1": "a", "arg2": "b"}}
	uris := []string{"test://static-text", "test://static-binary", "test://watched-resource", "test://template/7/data", "test://nothing"}

	var batch []json.RawMessage
	var want []bool
	sawTrue, sawFalse := false, false
	ask := func(req string, served bool, what string) {
		t.Helper()
		status, body := azPost(t, base, "/access/v1/evaluation", pep, req)
		require.Equal(t, http.StatusOK, status, body)
		var d azDecision
		require.NoError(t, json.Unmarshal([]byte(body), &d))
		require.NotNil(t, d.Decision, body)
		require.Equal(t, served, *d.Decision, "%s: %s", what, body)
		batch, want = append(batch, json.RawMessage(req)), append(want, served)
		sawTrue, sawFalse = sawTrue || served, sawFalse || !served
	}
	for _, s := range subjects {
		cs := connect(t, ctx, g.url, protocols[len(protocols)-1], s)
		for _, name := range prompts {
			_, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: name, Arguments: promptArgs[name]})
			served := err == nil || !strings.Contains(err.Error(), mcpadapter.AnswerUnknownPrompt(name)) && !strings.Contains(err.Error(), mcpadapter.AnswerPromptUnverified)
			var args json.RawMessage
			if promptArgs[name] != nil {
				args, _ = json.Marshal(promptArgs[name])
			}
			x := inspect.Explain(ctx, inspect.ExplainOptions{Revision: gw.Engine().Current(), Caller: s, Prompt: name, PromptArguments: args})
			require.Equal(t, served, x.Prompt.Granted, "prompts/get %s by %s: served %v (%v), explain %+v", name, s.Subject, served, err, x.Prompt)
			ask(catalogEval(s, "prompts/get", "mcp_prompt", name, promptArgs[name]), served, "prompts/get "+name+" by "+s.Subject)
		}
		for _, uri := range uris {
			_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
			served := err == nil || !strings.Contains(err.Error(), mcpadapter.AnswerUnknownResource)
			ask(catalogEval(s, "resources/read", "mcp_resource", uri, nil), served, "resources/read "+uri+" by "+s.Subject)
		}
	}
	require.True(t, sawTrue && sawFalse, "the table must hold both decisions")
	requireBatch(t, base, pep, batch, want)

	// Hidden is absent, for a PEP without the operator role.
	for _, c := range []struct{ action, typ, hidden, absent string }{
		{"prompts/get", "mcp_prompt", "ev.test_prompt_with_image", "ev.test_prompt_with_imagX"},
		{"resources/read", "mcp_resource", "test://static-binary", "test://static-binarX"},
		{"resources/read", "mcp_resource", "test://template/7/data", "test://templatX/7/data"},
	} {
		_, hidden := azPost(t, base, "/access/v1/evaluation", pep, catalogEval(carl, c.action, c.typ, c.hidden, nil))
		_, absent := azPost(t, base, "/access/v1/evaluation", pep, catalogEval(carl, c.action, c.typ, c.absent, nil))
		require.JSONEq(t, `{"decision":false}`, hidden, c.hidden)
		require.Equal(t, hidden, absent, c.hidden)
		_, hidden = azPost(t, base, "/access/v1/evaluation", pepAdmin, catalogEval(carl, c.action, c.typ, c.hidden, nil))
		_, absent = azPost(t, base, "/access/v1/evaluation", pepAdmin, catalogEval(carl, c.action, c.typ, c.absent, nil))
		require.Contains(t, hidden, "reason_admin", c.hidden)
		require.NotEqual(t, hidden, absent, "the operator is told which")
	}
	_, admin := azPost(t, base, "/access/v1/evaluation", pepAdmin, catalogEval(carl, "prompts/get", "mcp_prompt", "ev.test_prompt_with_image", nil))
	require.Contains(t, admin, "data.toolgate.grant.prompts")

	// Each action takes its own resource type; a resources/read has no
	// arguments and a prompt's are strings, as the methods take them.
	for _, req := range []string{
		catalogEval(ann, "prompts/get", "mcp_tool", "ev.test_simple_prompt", nil),
		catalogEval(ann, "resources/read", "mcp_prompt", "test://static-text", nil),
		catalogEval(ann, "resources/read", "mcp_resource", "test://static-text", map[string]string{"a": "b"}),
		strings.Replace(catalogEval(ann, "prompts/get", "mcp_prompt", "ev.test_prompt_with_arguments", map[string]string{"arg1": "a"}), `"a"}`, `1}`, 1),
	} {
		status, body := azPost(t, base, "/access/v1/evaluation", pep, req)
		require.Equal(t, http.StatusBadRequest, status, req+" "+body)
	}
}
