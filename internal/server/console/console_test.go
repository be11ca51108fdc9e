package console_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/internal/inspect"
	"github.com/toolgate/toolgate/internal/server/approvals"
	"github.com/toolgate/toolgate/internal/server/console"
	"github.com/toolgate/toolgate/internal/testkit/mcptest"
	"github.com/toolgate/toolgate/store"
	"github.com/toolgate/toolgate/toolcall"
)

// fixture is a console over the bundled example, a real approval gate
// over a memory store, and bearer tokens naming callers by subject.
type fixture struct {
	srv  *httptest.Server
	gate *approvals.Gate
	eng  *engine.Engine
	act  *console.Activity
}

var people = map[string]*toolcall.Caller{
	"tok-ops":        {Subject: "ops", Roles: []string{"admin"}},
	"tok-approver":   {Subject: "ann", Roles: []string{"approver"}},
	"tok-contractor": {Subject: "carl", Roles: []string{"contractor"}},
}

func newFixture(t *testing.T) *fixture { return newFixtureCalls(t, true, "") }

// newFixtureCalls makes the fixture; with calls, the matrix reads step 5
// from the engine's call decision (as the gateway wires it), else from
// an explanation per cell.
func newFixtureCalls(t *testing.T, calls bool, policy string) *fixture {
	t.Helper()
	ctx := t.Context()
	eng, err := engine.New(ctx, toolgate.Source("", policy), engine.WithTimeout(time.Minute))
	require.NoError(t, err)
	gate := approvals.New(store.NewMemoryStore(), approvals.Options{})
	act := console.NewActivity(0)
	done := make(chan struct{})
	var callsFn func(ctx context.Context, c *toolcall.Caller, tool string, meta json.RawMessage) *engine.CallDecision
	if calls {
		callsFn = func(ctx context.Context, c *toolcall.Caller, tool string, meta json.RawMessage) *engine.CallDecision {
			return eng.Current().Call(ctx, c, engine.Request{Method: engine.MethodCall, Tool: tool, Meta: engine.BoundMeta(meta)})
		}
	}
	c := console.New(console.Options{
		Calls: callsFn,
		Auth: func(r *http.Request) (*toolcall.Caller, bool) {
			tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			c := people[tok]
			return c, c != nil && c.Subject == "ops"
		},
		Explainer: console.ExplainerFunc(func(ctx context.Context, c *toolcall.Caller, tool string, meta json.RawMessage) *inspect.Explanation {
			return inspect.Explain(ctx, inspect.ExplainOptions{Revision: eng.Current(), Caller: c, Tool: tool, Meta: meta})
		}),
		Approvals: gate,
		Approver:  gate.IsApprover,
		Activity:  act,
		Status:    func() console.Status { return console.Status{Status: "ok", Revision: 1} },
		Done:      done,
	})
	srv := httptest.NewServer(c)
	t.Cleanup(func() { close(done); srv.Close() })
	return &fixture{srv: srv, gate: gate, eng: eng, act: act}
}

func (f *fixture) do(t *testing.T, method, path, token, body string) (int, []byte) {
	t.Helper()
	return mcptest.Do(t, t.Context(), method, f.srv.URL+path, token, body)
}

// stream opens the event stream at path as token's caller: the answer is
// 200 and the stream opens with a comment (subscribed). rd reads the
// events after it; the stream is closed when the test ends.
func (f *fixture) stream(t *testing.T, path, token string) (res *http.Response, rd *bufio.Reader) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), "GET", f.srv.URL+path, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err = f.srv.Client().Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { res.Body.Close() })
	require.Equal(t, http.StatusOK, res.StatusCode)
	rd = bufio.NewReader(res.Body)
	line, err := rd.ReadString('\n')
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(line, ":"), line)
	return res, rd
}

// bundledPolicies is a new policy directory holding the bundled
// policies.
func bundledPolicies(t *testing.T) string {
	t.Helper()
	policy := t.TempDir()
	for _, name := range []string{"grant.rego", "call.rego"} {
		b, err := toolgate.Bundled.ReadFile("rego/" + name)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(policy, name), b, 0o600))
	}
	return policy
}

// hold records an approval request for caller's call of tool, as the
// adapter does when the approval rule holds it.
func (f *fixture) hold(t *testing.T, caller *toolcall.Caller, tool string, args string, approvers ...string) string {
	t.Helper()
	row := f.eng.Current().Tool(tool)
	require.NotNil(t, row, tool)
	chk, err := f.gate.Check(t.Context(), &hooks.CallContext{Name: tool, Tool: row, Caller: caller, Arguments: json.RawMessage(args)},
		&engine.Approval{Reason: "needs a look", Approvers: approvers, TTL: time.Hour})
	require.NoError(t, err)
	return chk.ID
}

var operatorOnly = []struct{ method, path, body string }{
	{"GET", "/console/api/status", ""},
	{"GET", "/console/api/callers", ""},
	{"POST", "/console/api/callers/parse", `{"document":"[]"}`},
	{"POST", "/console/api/matrix", `{"callers":[]}`},
	{"POST", "/console/api/explain", `{"tool":"echo"}`},
	{"GET", "/console/api/activity", ""},
}

func TestNobodySeesNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.hold(t, people["tok-contractor"], "resetCounter", `{"key":"k"}`, "admin")
	all := append([]struct{ method, path, body string }{
		{"GET", "/console/api/me", ""},
		{"GET", "/console/api/approvals", ""},
		{"POST", "/console/api/approvals/" + id + "/approve", `{}`},
		{"POST", "/console/api/approvals/" + id + "/refuse", `{}`},
	}, operatorOnly...)
	for _, e := range all {
		code, body := f.do(t, e.method, e.path, "", e.body)
		assert.Equal(t, http.StatusUnauthorized, code, "%s %s", e.method, e.path)
		assert.NotContains(t, string(body), id, "%s %s", e.method, e.path)
		assert.NotContains(t, string(body), "resetCounter", "%s %s", e.method, e.path)
	}
	// The page itself and the sign-in settings are public: they hold nothing.
	code, _ := f.do(t, "GET", "/console/", "", "")
	assert.Equal(t, http.StatusOK, code)
	code, body := f.do(t, "GET", "/console/api/config", "", "")
	assert.Equal(t, http.StatusOK, code)
	assert.JSONEq(t, `{"oauth":null}`, string(body))
}

func TestWithoutTheOperatorRoleOnlyTheirApprovals(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	mine := f.hold(t, people["tok-contractor"], "resetCounter", `{"key":"k1"}`, "approver")
	notMine := f.hold(t, people["tok-contractor"], "resetCounter", `{"key":"k2"}`, "admin")
	own := f.hold(t, people["tok-approver"], "resetCounter", `{"key":"k3"}`, "approver") // ann's own request

	for _, e := range operatorOnly {
		code, body := f.do(t, e.method, e.path, "tok-approver", e.body)
		assert.Equal(t, http.StatusForbidden, code, "%s %s", e.method, e.path)
		assert.NotContains(t, string(body), "resetCounter")
	}
	code, body := f.do(t, "GET", "/console/api/me", "tok-approver", "")
	require.Equal(t, http.StatusOK, code)
	assert.JSONEq(t, `{"subject":"ann","roles":["approver"],"operator":false}`, string(body))

	code, body = f.do(t, "GET", "/console/api/approvals", "tok-approver", "")
	require.Equal(t, http.StatusOK, code)
	var list struct{ Approvals []approvals.Request }
	require.NoError(t, json.Unmarshal(body, &list))
	require.Len(t, list.Approvals, 1)
	assert.Equal(t, mine, list.Approvals[0].ID)
	assert.JSONEq(t, `{"key":"k1"}`, string(list.Approvals[0].Arguments), "approvers decide on the arguments")

	// One they may not decide: 404, as an unknown id; their own: 403.
	code, _ = f.do(t, "POST", "/console/api/approvals/"+notMine+"/approve", "tok-approver", `{}`)
	assert.Equal(t, http.StatusNotFound, code)
	code, _ = f.do(t, "POST", "/console/api/approvals/"+own+"/approve", "tok-approver", `{}`)
	assert.Equal(t, http.StatusForbidden, code)
	code, _ = f.do(t, "POST", "/console/api/approvals/nope/approve", "tok-approver", `{}`)
	assert.Equal(t, http.StatusNotFound, code)

	code, body = f.do(t, "POST", "/console/api/approvals/"+mine+"/approve", "tok-approver", `{"note":"ok once"}`)
	require.Equal(t, http.StatusOK, code, string(body))
	var decided approvals.Request
	require.NoError(t, json.Unmarshal(body, &decided))
	assert.Equal(t, "approved", decided.Status)
	assert.Equal(t, "ann", decided.DecidedBy)
	assert.Equal(t, "ok once", decided.Note)
	code, _ = f.do(t, "POST", "/console/api/approvals/"+mine+"/refuse", "tok-approver", `{}`)
	assert.Equal(t, http.StatusConflict, code)

	// The operator sees what the admin role may decide, not ann's queue.
	code, body = f.do(t, "GET", "/console/api/approvals", "tok-ops", "")
	require.Equal(t, http.StatusOK, code)
	require.NoError(t, json.Unmarshal(body, &list))
	require.Len(t, list.Approvals, 1)
	assert.Equal(t, notMine, list.Approvals[0].ID)
}

func TestMatrixAndExplanation(t *testing.T) {
	t.Parallel()
	for _, calls := range []bool{true, false} {
		t.Run(fmt.Sprintf("calls=%t", calls), func(t *testing.T) {
			t.Parallel()
			testMatrix(t, newFixtureCalls(t, calls, ""))
		})
	}
}

// TestMatrixDeniedForMeta: a deny rule that reads _meta and a rule that
// answers show in the cells, the same with either way of reading step 5.
func TestMatrixDeniedForMeta(t *testing.T) {
	t.Parallel()
	policy := bundledPolicies(t)
	require.NoError(t, os.WriteFile(filepath.Join(policy, "extra.rego"), []byte(`package toolgate.call

deny contains "not on fridays" if input.request.meta.day == "friday"

result := {"content": [{"type": "text", "text": "canned"}]} if input.tool.name == "add"
`), 0o600))
	for _, calls := range []bool{true, false} {
		t.Run(fmt.Sprintf("calls=%t", calls), func(t *testing.T) {
			t.Parallel()
			f := newFixtureCalls(t, calls, policy)
			cells := func(meta string) map[string]string {
				code, body := f.do(t, "POST", "/console/api/matrix", "tok-ops", `{"callers":[{"subject":"ops","roles":["admin"]}],"meta":`+meta+`}`)
				require.Equal(t, http.StatusOK, code, string(body))
				var m console.Matrix
				require.NoError(t, json.Unmarshal(body, &m))
				out := map[string]string{}
				for _, r := range m.Rows {
					out[r.Name] = r.Cells[0]
				}
				return out
			}
			plain := cells(`{}`)
			assert.Equal(t, console.CellVisible, plain["echo"])
			assert.Equal(t, console.CellAnswered, plain["add"])
			assert.Equal(t, console.CellApproval, plain["resetCounter"])
			friday := cells(`{"day":"friday"}`)
			assert.Equal(t, console.CellDenied, friday["echo"])
			assert.Equal(t, console.CellDenied, friday["add"], "refusing wins over an answer")
			assert.Equal(t, console.CellDenied, friday["resetCounter"], "refusing wins over approval")
		})
	}
}

func testMatrix(t *testing.T, f *fixture) {
	code, body := f.do(t, "POST", "/console/api/matrix", "tok-ops",
		`{"callers":[{"subject":"carl","roles":["contractor"]},{"subject":"ops","roles":["admin"]},{"subject":"m","roles":["manager"]}]}`)
	require.Equal(t, http.StatusOK, code, string(body))
	var m console.Matrix
	require.NoError(t, json.Unmarshal(body, &m))
	cells := map[string][]string{}
	for _, r := range m.Rows {
		cells[r.Name] = r.Cells
	}
	assert.Equal(t, len(f.eng.Current().Registry().Tools), m.Total)
	assert.Equal(t, []string{console.CellVisible, console.CellVisible, console.CellVisible}, cells["echo"])
	assert.Equal(t, []string{console.CellHiddenOverride, console.CellVisible, console.CellVisible}, cells["getReward"])
	assert.Equal(t, []string{console.CellHiddenOverride, console.CellApproval, console.CellHiddenBase}, cells["resetCounter"])
	assert.Equal(t, "override", m.Columns[0].Mode)

	// Paged and searched.
	code, body = f.do(t, "POST", "/console/api/matrix", "tok-ops", `{"callers":[{"subject":"ops","roles":["admin"]}],"q":"GETREW","limit":5}`)
	require.Equal(t, http.StatusOK, code)
	require.NoError(t, json.Unmarshal(body, &m))
	assert.Equal(t, 1, m.Total)
	require.Len(t, m.Rows, 1)
	assert.Equal(t, "getReward", m.Rows[0].Name)
	code, body = f.do(t, "POST", "/console/api/matrix", "tok-ops", `{"callers":[],"offset":3,"limit":2}`)
	require.Equal(t, http.StatusOK, code)
	require.NoError(t, json.Unmarshal(body, &m))
	require.Len(t, m.Rows, 2)
	assert.Equal(t, f.eng.Current().Registry().Tools[3].Name, m.Rows[0].Name)

	// A hidden cell's explanation names the rule, file:line.
	code, body = f.do(t, "POST", "/console/api/explain", "tok-ops", `{"caller":{"subject":"carl","roles":["contractor"]},"tool":"getReward"}`)
	require.Equal(t, http.StatusOK, code, string(body))
	var x console.CellExplanation
	require.NoError(t, json.Unmarshal(body, &x))
	require.NotNil(t, x.Call)
	assert.Equal(t, inspect.StageUnknown, x.Call.Stage)
	assert.Equal(t, "Error: Unknown tool 'getReward'.", x.Call.Answer)
	require.NotEmpty(t, x.Call.Rules)
	assert.Equal(t, "rego/grant.rego", x.Call.Rules[0].File)
	assert.Positive(t, x.Call.Rules[0].Row)

	code, _ = f.do(t, "POST", "/console/api/matrix", "tok-ops", `not json`)
	assert.Equal(t, http.StatusBadRequest, code)
	code, _ = f.do(t, "POST", "/console/api/explain", "tok-ops", `{}`)
	assert.Equal(t, http.StatusBadRequest, code)
}

// TestTailHasNoArgumentValues streams the tail while a call whose
// arguments, _meta and failure carry a secret finishes: the event names
// the call, never the value.
func TestTailHasNoArgumentValues(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const secret = "s3cr3t-argument-value"
	res, rd := f.stream(t, "/console/api/activity?tool=echo", "tok-ops")
	assert.Equal(t, "text/event-stream", res.Header.Get("Content-Type"))

	hook := f.act.Hook()
	rev := f.eng.Current()
	caller := people["tok-contractor"]
	for _, name := range []string{"add", "echo"} { // the filter keeps only echo
		call := &hooks.CallContext{DecisionID: "d-" + name, Name: name, Tool: rev.Tool(name), Method: rev.Tool(name).Method,
			Arguments: json.RawMessage(`{"text":"` + secret + `"}`), Meta: engine.BoundMeta(json.RawMessage(`{"k":"` + secret + `"}`)),
			Caller: caller, Revision: rev, Start: time.Now()}
		require.NoError(t, hook.After(t.Context(), call, &hooks.Record{Outcome: toolcall.OutcomeFailed, Err: errors.New("boom: " + secret)}))
	}
	var event strings.Builder
	for {
		line, err := rd.ReadString('\n')
		require.NoError(t, err)
		if line == "\n" && event.Len() > 0 {
			break
		}
		event.WriteString(line)
	}
	assert.NotContains(t, event.String(), secret)
	assert.Contains(t, event.String(), "event: activity\n")
	data := event.String()[strings.Index(event.String(), "data: ")+6:]
	var e console.Event
	require.NoError(t, json.Unmarshal([]byte(data), &e))
	assert.Equal(t, "d-echo", e.DecisionID)
	assert.Equal(t, "carl", e.Subject)
	assert.Equal(t, "failed", e.Outcome)
	assert.Len(t, e.ArgumentsSHA256, 64)
	assert.Equal(t, []toolcall.Caller{{Subject: "carl", Roles: []string{"contractor"}}}, f.act.Seen())
	// The backlog too holds no value.
	for _, e := range f.act.Backlog() {
		b, _ := json.Marshal(e)
		assert.NotContains(t, string(b), secret)
	}
}

// TestApprovalEventsForApprovers: an approver without the operator role
// gets word that the queue changed, and nothing of the activity; a
// signed-in caller who is no approver holds no stream (204, Retry-After).
func TestApprovalEventsForApprovers(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	code, _ := f.do(t, "GET", "/console/api/approvals/events", "tok-approver", "")
	assert.Equal(t, http.StatusNoContent, code, "no rule has named the approver's role yet")
	f.hold(t, people["tok-contractor"], "resetCounter", `{"key":"k0"}`, "approver")
	code, _ = f.do(t, "GET", "/console/api/approvals/events", "tok-contractor", "")
	assert.Equal(t, http.StatusNoContent, code, "the contractor is no approver")
	_, rd := f.stream(t, "/console/api/approvals/events", "tok-approver")

	rev := f.eng.Current()
	call := &hooks.CallContext{DecisionID: "d-1", Name: "resetCounter", Tool: rev.Tool("resetCounter"), Method: "demo.count",
		Arguments: json.RawMessage(`{"key":"k"}`), Caller: people["tok-contractor"], Revision: rev, Start: time.Now()}
	require.NoError(t, f.act.Hook().After(t.Context(), call, &hooks.Record{Outcome: toolcall.OutcomeHeld, ApprovalID: "a1"}))
	var got strings.Builder
	for !strings.HasSuffix(got.String(), "\n\n") || got.Len() < 3 {
		line, err := rd.ReadString('\n')
		require.NoError(t, err)
		if line == "\n" && got.Len() == 0 {
			continue
		}
		got.WriteString(line)
	}
	assert.Equal(t, "event: approvals\ndata: {}\n\n", got.String())

	code, _ = f.do(t, "GET", "/console/api/approvals/events", "", "")
	assert.Equal(t, http.StatusUnauthorized, code)
}

func TestParseCallersFile(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	doc, _ := json.Marshal(map[string]string{"document": "- subject: carl\n  roles: [contractor]\n- {subject: m, roles: [manager]}\n"})
	code, body := f.do(t, "POST", "/console/api/callers/parse", "tok-ops", string(doc))
	require.Equal(t, http.StatusOK, code, string(body))
	var out struct{ Callers []console.Caller }
	require.NoError(t, json.Unmarshal(body, &out))
	require.Len(t, out.Callers, 2)
	assert.Equal(t, "carl", out.Callers[0].Subject)
	assert.Equal(t, []string{"manager"}, out.Callers[1].Roles)
	assert.Equal(t, "file", out.Callers[1].From)

	doc, _ = json.Marshal(map[string]string{"document": "- {subject: carl, role: admin}\n"})
	code, body = f.do(t, "POST", "/console/api/callers/parse", "tok-ops", string(doc))
	assert.Equal(t, http.StatusBadRequest, code, "a misspelt key is refused, as toolgate check does")
	assert.Contains(t, string(body), "not a callers file")
	code, _ = f.do(t, "POST", "/console/api/callers/parse", "tok-approver", string(doc))
	assert.Equal(t, http.StatusForbidden, code)
}
