package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/toolcall"
)

// testRegistry has one row per base-decision case of docs/contract.md §2.
const testRegistry = `
sections:
  rewards: { roles: [manager, admin] }
  reports: { roles: [admin] }
tools:
  - name: echo
    method: demo.echo
    arguments: [{ name: text, type: string }]
    annotations: { readOnlyHint: true }
  - name: getReward
    method: demo.getReward
    section: rewards
    arguments:
      - { name: idReward, type: int, required: true }
      - { name: note, type: string, default: "" }
    annotations: { readOnlyHint: true }
  - name: report
    method: demo.echo
    section: reports
  - name: orphan
    method: demo.echo
    section: nowhere
  - name: execUrl
    method: demo.execUrl
    driver: url
    arguments: [{ name: url, type: string, required: true }]
`

var (
	alice   = &toolcall.Caller{Subject: "alice", Roles: []string{"manager"}}
	bob     = &toolcall.Caller{Subject: "bob"}
	carol   = &toolcall.Caller{Subject: "carol", Roles: []string{"admin"}}
	dave    = &toolcall.Caller{Subject: "dave", Roles: []string{"contractor", "manager"}}
	listReq = engine.Request{Method: engine.MethodList}
)

// newEngine loads testRegistry with the given policy files.
func newEngine(t testing.TB, policies map[string]string, opts ...engine.Option) *engine.Engine {
	t.Helper()
	e, err := loadEngine(policies, opts...)
	require.NoError(t, err)
	return e
}

// loadEngine is newEngine returning the error.
func loadEngine(policies map[string]string, opts ...engine.Option) (*engine.Engine, error) {
	fsys := fstest.MapFS{"registry.yaml": {Data: []byte(testRegistry)}, "policies/.keep": {Data: nil}}
	for name, src := range policies {
		fsys["policies/"+name] = &fstest.MapFile{Data: []byte(src)}
	}
	opts = append([]engine.Option{engine.WithTimeout(10 * time.Second)}, opts...)
	return engine.New(context.Background(), engine.Source{FS: fsys, Registry: "registry.yaml", Policies: "policies"}, opts...)
}

// cacheModes runs a decision test with the grant decision cache on and off:
// answers must not depend on it.
func cacheModes(t *testing.T, test func(t *testing.T, opts ...engine.Option)) {
	t.Parallel()
	for _, on := range []bool{true, false} {
		name := "cache=off"
		if on {
			name = "cache=on"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t, engine.WithDecisionCache(on))
		})
	}
}

func TestBaseDecision(t *testing.T) { cacheModes(t, testBaseDecision) }

func testBaseDecision(t *testing.T, opts ...engine.Option) {
	rev := newEngine(t, nil, opts...).Current()
	cases := []struct {
		caller *toolcall.Caller
		want   []string
	}{
		{nil, nil},                         // nobody: no tool at all
		{bob, []string{"echo", "execUrl"}}, // no section: every signed-in caller
		{alice, []string{"echo", "getReward", "execUrl"}},           // a role listed for the section
		{carol, []string{"echo", "getReward", "report", "execUrl"}}, // "orphan" names no section: nobody
	}
	for _, tc := range cases {
		d := rev.Grant(context.Background(), tc.caller, listReq)
		require.Equal(t, d.Granted(), rev.Grant(context.Background(), tc.caller, listReq).Granted(), "asked twice")
		if tc.caller == nil {
			require.Equal(t, engine.Nobody, d.Outcome)
		} else {
			require.Equal(t, engine.NoOverride, d.Outcome)
		}
		require.Equal(t, tc.want, d.Granted(), "caller %v", tc.caller)
	}
}

const contractorPolicy = `package toolgate.grant

granted := {t.name | some t in input.tools; t.base; t.name != "execUrl"} if {
	"contractor" in input.caller.roles
}
`

func TestGrantOverride(t *testing.T) { cacheModes(t, testGrantOverride) }

func testGrantOverride(t *testing.T, opts ...engine.Option) {
	cases := []struct {
		name    string
		policy  string
		caller  *toolcall.Caller
		outcome engine.Outcome
		granted []string
	}{
		{"undefined complete rule: no override", contractorPolicy, alice, engine.NoOverride, []string{"echo", "getReward", "execUrl"}},
		{"defined complete rule: override", contractorPolicy, dave, engine.Override, []string{"echo", "getReward"}},
		{"defined empty set: override hiding everything", "package toolgate.grant\n\ngranted := set()\n", carol, engine.Override, nil},
		{"partial set rule no body satisfies: empty override", "package toolgate.grant\n\ngranted contains n if {\n\tn := \"x\"\n\tinput.caller.subject == \"nobody-at-all\"\n}\n", carol, engine.Override, nil},
		{"override grants what the base refuses", "package toolgate.grant\n\ngranted := {\"report\", \"orphan\"}\n", bob, engine.Override, []string{"report", "orphan"}},
		{"override naming no row grants nothing more", "package toolgate.grant\n\ngranted := {\"echo\", \"ghost\"}\n", bob, engine.Override, []string{"echo"}},
		{"no policy at all: no override", "", carol, engine.NoOverride, []string{"echo", "getReward", "report", "execUrl"}},
		{"other package only: no override", "package other\n\ngranted := set()\n", bob, engine.NoOverride, []string{"echo", "execUrl"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pol := map[string]string{}
			if tc.policy != "" {
				pol["grant.rego"] = tc.policy
			}
			rev := newEngine(t, pol, opts...).Current()
			for range 2 { // the second time from the cache, when it is on
				d := rev.Grant(context.Background(), tc.caller, listReq)
				require.NoError(t, d.Err)
				require.Equal(t, tc.outcome, d.Outcome)
				require.Equal(t, tc.granted, d.Granted())
			}
			d := rev.Grant(context.Background(), tc.caller, engine.Request{Method: engine.MethodCall, Tool: "echo"})
			require.NoError(t, d.Err)
			require.Equal(t, tc.outcome, d.Outcome)
			require.Equal(t, tc.granted, d.Granted())
			if tc.outcome == engine.Override {
				require.NotNil(t, d.OverrideSet())
			}
			ok, err := d.Allowed("ghost")
			require.NoError(t, err)
			require.False(t, ok, "a name no row has is never allowed")
		})
	}
}

func TestGrantFailures(t *testing.T) { cacheModes(t, testGrantFailures) }

func testGrantFailures(t *testing.T, opts ...engine.Option) {
	cases := []struct {
		name   string
		policy string
		kind   string
		code   string
	}{
		{"conflict", "package toolgate.grant\n\ngranted := {\"echo\"} if input.caller\n\ngranted := {\"report\"} if input.caller\n", engine.KindEval, "eval_conflict_error"},
		{"builtin error is strict", "package toolgate.grant\n\ngranted := {\"echo\"} if to_number(\"not a number\") > 0\n", engine.KindBuiltin, "eval_builtin_error"},
		{"granted is a string", "package toolgate.grant\n\ngranted := \"echo\"\n", engine.KindType, ""},
		{"granted is an array", "package toolgate.grant\n\ngranted := [\"echo\"]\n", engine.KindType, ""},
		{"granted holds a number", "package toolgate.grant\n\ngranted := {\"echo\", 1}\n", engine.KindType, ""},
		{"object key conflict", "package toolgate.grant\n\nx[\"k\"] := 1\n\nx[\"k\"] := 2\n\ngranted := {\"echo\"} if x\n", engine.KindEval, "eval_conflict_error"},
		{"time-out", "package toolgate.grant\n\ngranted := {n | some i in numbers.range(1, 100000000); n := sprintf(\"%d\", [i])}\n", engine.KindTimeout, "eval_cancel_error"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// Only the time-out case runs under a short deadline: under load
			// any other case could pass 50 ms and fail with the wrong kind.
			// The others get a generous one: the default 250 ms is met on a
			// loaded machine under -race.
			o := append(opts[:len(opts):len(opts)], engine.WithTimeout(30*time.Second))
			if tc.kind == engine.KindTimeout {
				o = append(opts[:len(opts):len(opts)], engine.WithTimeout(50*time.Millisecond))
			}
			rev := newEngine(t, map[string]string{"grant.rego": tc.policy}, o...).Current()
			d := rev.Grant(context.Background(), carol, engine.Request{Method: engine.MethodCall, Tool: "echo"})
			require.Equal(t, engine.Failed, d.Outcome)
			var pe *engine.PolicyError
			require.ErrorAs(t, d.Err, &pe)
			require.ErrorIs(t, d.Err, engine.ErrPolicy)
			require.Equal(t, tc.kind, pe.Kind, "%v", pe)
			require.Equal(t, tc.code, pe.Code, "%v", pe)
			require.Equal(t, "data.toolgate.grant.granted", pe.Rule)

			// Strict: the call is refused with the failure.
			ok, err := d.Allowed("echo")
			require.False(t, ok)
			require.ErrorIs(t, err, engine.ErrPolicy)
			require.Nil(t, d.Granted())
			// Lenient: the listing falls back to the base decision.
			require.True(t, d.Visible("echo"))
			require.True(t, d.Visible("report"))
			require.False(t, d.Visible("orphan"))
		})
	}
}

func TestCallRules(t *testing.T) {
	t.Parallel()
	policy := `package toolgate.call

deny contains "zulu: always for report" if input.tool.name == "report"

deny contains "alpha: needs approval" if {
	input.tool.name == "report"
	not approved
}

approved if is_string(input.request.meta["festi/approvedBy"])

result := {"content": [{"type": "text", "text": "cached"}], "isError": false} if input.tool.name == "echo"
`
	rev := newEngine(t, map[string]string{"call.rego": policy}).Current()

	d := rev.Call(context.Background(), carol, engine.Request{Method: engine.MethodCall, Tool: "report", Arguments: json.RawMessage(`{}`)})
	require.NoError(t, d.Err)
	require.Len(t, d.Deny, 2)
	require.Equal(t, "alpha: needs approval", d.Deny[0].Message, "reasons are sorted")
	require.Equal(t, "zulu: always for report", d.Deny[1].Message)
	require.Equal(t, []engine.Location{{File: "policies/call.rego", Row: 5, Col: 1}}, d.Deny[0].Rules)
	require.Equal(t, []engine.Location{{File: "policies/call.rego", Row: 3, Col: 1}}, d.Deny[1].Rules)
	require.Nil(t, d.Result)

	d = rev.Call(context.Background(), carol, engine.Request{Method: engine.MethodCall, Tool: "echo"})
	require.NoError(t, d.Err)
	require.Empty(t, d.Deny)
	require.JSONEq(t, `{"content":[{"type":"text","text":"cached"}],"isError":false}`, string(d.Result))
	require.Equal(t, []engine.Location{{File: "policies/call.rego", Row: 12, Col: 1}}, d.ResultRules)

	d = rev.Call(context.Background(), carol, engine.Request{Method: engine.MethodCall, Tool: "getReward"})
	require.NoError(t, d.Err)
	require.Empty(t, d.Deny)
	require.Nil(t, d.Result)
}

func TestCallRuleFailures(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"empty reason":        "deny contains \"\" if true",
		"non-string reason":   "deny contains 42 if true",
		"deny not a set":      "deny := \"no\"",
		"result not object":   "result := \"done\"",
		"builtin error":       "deny contains \"x\" if to_number(\"abc\") > 1",
		"conflicting results": "result := {\"a\": 1}\n\nresult := {\"a\": 2}",
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := callFailure(t, body)
			require.True(t, errors.Is(d.Err, engine.ErrPolicy))
		})
	}
}

// callFailure asks for carol's call of echo under a call policy of body,
// and requires the answer to fail with a policy error.
func callFailure(t *testing.T, body string) *engine.CallDecision {
	t.Helper()
	rev := newEngine(t, map[string]string{"call.rego": "package toolgate.call\n\n" + body + "\n"}).Current()
	d := rev.Call(context.Background(), carol, engine.Request{Method: engine.MethodCall, Tool: "echo"})
	var pe *engine.PolicyError
	require.ErrorAs(t, d.Err, &pe)
	return d
}

func TestExplainFindsTheDecidingRule(t *testing.T) {
	t.Parallel()
	rev := newEngine(t, map[string]string{"grant.rego": contractorPolicy}).Current()
	d := rev.Explain(context.Background(), dave, listReq)
	require.Equal(t, engine.Override, d.Outcome)
	require.Equal(t, []engine.Location{{File: "policies/grant.rego", Row: 3, Col: 1}}, d.Rules)
	require.Equal(t, []string{"echo", "getReward"}, d.Granted())
}

func TestCompileErrorsAreAllReported(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		"registry.yaml":         {Data: []byte(testRegistry)},
		"policies/a.rego":       {Data: []byte("package a\n\np := \n")},
		"policies/b.rego":       {Data: []byte("package b\n\nq if {\n")},
		"policies/c.rego":       {Data: []byte("package c\n\nr if undefined_function(1)\n")},
		"policies/x_test.rego":  {Data: []byte("this is not even rego")},
		"policies/.hidden.rego": {Data: []byte("neither is this")},
	}
	_, err := engine.New(context.Background(), engine.Source{FS: fsys, Registry: "registry.yaml", Policies: "policies"})
	var ce *engine.CompileError
	require.ErrorAs(t, err, &ce)
	files := map[string]bool{}
	for _, d := range ce.Diagnostics {
		files[d.File] = true
	}
	require.Equal(t, map[string]bool{"policies/a.rego": true, "policies/b.rego": true}, files, "parse errors stop before compiling: %v", err)
}

func TestDataFilesAreMounted(t *testing.T) { cacheModes(t, testDataFilesAreMounted) }

func testDataFilesAreMounted(t *testing.T, opts ...engine.Option) {
	rev := newEngine(t, map[string]string{
		"grant.rego":               "package toolgate.grant\n\ngranted := {t | some t in data.toolgate.lists.allowed} if input.caller.subject == \"bob\"\n",
		"toolgate/lists/data.yaml": "allowed: [report]\n",
	}, opts...).Current()
	d := rev.Grant(context.Background(), bob, listReq)
	require.NoError(t, d.Err)
	require.Equal(t, []string{"report"}, d.Granted())
}

// TestCompileErrorInAWatchedRuleIsReportedOnce: the provenance copy of a
// rule must not double its diagnostics.
func TestCompileErrorInAWatchedRuleIsReportedOnce(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		"registry.yaml":       {Data: []byte(testRegistry)},
		"policies/grant.rego": {Data: []byte("package toolgate.grant\n\ngranted := {x | some x in undefined_fn(1)}\n")},
	}
	_, err := engine.New(context.Background(), engine.Source{FS: fsys, Registry: "registry.yaml", Policies: "policies"})
	var ce *engine.CompileError
	require.ErrorAs(t, err, &ce)
	require.Len(t, ce.Diagnostics, 1, "%v", err)
	require.Equal(t, 3, ce.Diagnostics[0].Row)
}

// TestCallRulesFromData: data.toolgate.call.deny given as a data document
// (no rule) is still read — JSON has no sets, so it fails closed — and the
// call query is skipped only when nothing at all defines the call rules.
func TestCallRulesFromData(t *testing.T) {
	t.Parallel()
	rev := newEngine(t, map[string]string{"toolgate/call/data.json": `{"deny": ["from data"]}`}).Current()
	d := rev.Call(context.Background(), carol, engine.Request{Method: engine.MethodCall, Tool: "echo"})
	require.ErrorIs(t, d.Err, engine.ErrPolicy)

	rev = newEngine(t, map[string]string{"grant.rego": contractorPolicy}).Current()
	d = rev.Call(context.Background(), carol, engine.Request{Method: engine.MethodCall, Tool: "echo"})
	require.NoError(t, d.Err)
	require.Empty(t, d.Deny)
	require.Nil(t, d.Result)
}
