package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/diag"
	"github.com/toolgate/toolgate/engine"
)

// TestLimitRule reads data.toolgate.call.limit (docs/contract.md §18): a set of
// objects, sorted by key, each with the rules that defined it.
func TestLimitRule(t *testing.T) {
	t.Parallel()
	policy := `package toolgate.call

limit contains {"key": sprintf("subject/%s", [input.caller.subject]), "max": 10, "per": "1m", "reason": "ten a minute"}

limit contains {"key": "all", "max": 1000, "per": "24h", "reason": "a thousand a day"} if input.tool.name == "report"
`
	rev := newEngine(t, map[string]string{"limits.rego": policy}).Current()
	d := rev.Call(context.Background(), carol, engine.Request{Method: engine.MethodCall, Tool: "report"})
	require.NoError(t, d.Err)
	assert.Equal(t, []engine.Limit{
		{Key: "all", Max: 1000, Per: 24 * time.Hour, Reason: "a thousand a day", Rules: []engine.Location{{File: "policies/limits.rego", Row: 5, Col: 1}}},
		{Key: "subject/carol", Max: 10, Per: time.Minute, Reason: "ten a minute", Rules: []engine.Location{{File: "policies/limits.rego", Row: 3, Col: 1}}},
	}, d.Limits)
	d = rev.Call(context.Background(), carol, engine.Request{Method: engine.MethodCall, Tool: "echo"})
	require.NoError(t, d.Err)
	assert.Len(t, d.Limits, 1)
}

// TestResultRulesCostNothingWhenUndefined: policies without result rules
// build no result document and evaluate nothing; policies with only
// result rules do not evaluate the call rules.
func TestResultRulesCostNothingWhenUndefined(t *testing.T) {
	t.Parallel()
	rev := newEngine(t, map[string]string{"grant.rego": "package toolgate.grant\n\ngranted := {\"echo\"}\n"}).Current()
	assert.False(t, rev.HasResultRules())
	d := rev.Result(context.Background(), carol, engine.Request{Method: engine.MethodCall, Tool: "echo"}, json.RawMessage(`{"content":[]}`))
	assert.Equal(t, &engine.ResultDecision{Revision: rev}, d)

	e := newEngine(t, map[string]string{"result.rego": "package toolgate.result\n\nredact contains `x+`\n"})
	rev = e.Current()
	assert.True(t, rev.HasResultRules())
	before := rev.Evaluations()
	cd := rev.Call(context.Background(), carol, engine.Request{Method: engine.MethodCall, Tool: "echo"})
	require.NoError(t, cd.Err)
	assert.Equal(t, before, rev.Evaluations(), "no call rule: the call query is not evaluated")
	rd := rev.Result(context.Background(), carol, engine.Request{Method: engine.MethodCall, Tool: "echo"}, json.RawMessage(`{"content":[{"type":"text","text":"xx"}],"isError":false}`))
	require.NoError(t, rd.Err)
	require.Len(t, rd.Redact, 1)
	assert.Equal(t, "x+", rd.Redact[0].String())
	assert.Equal(t, []engine.Location{{File: "policies/result.rego", Row: 3, Col: 1}}, rd.RedactRules)
}

// TestResultRuleInput: the result rules read input.result beside the
// call's input (caller, request, tool); numbers in the result are exact.
func TestResultRuleInput(t *testing.T) {
	t.Parallel()
	rev := newEngine(t, map[string]string{"result.rego": `package toolgate.result

deny contains sprintf("%s %s %s %v", [input.caller.subject, input.tool.name, input.result.content[0].text, input.result.isError]) if true

deny contains "big" if input.result.structuredContent.n == 12345678901234567890
`}).Current()
	d := rev.Result(context.Background(), carol, engine.Request{Method: engine.MethodCall, Tool: "echo", Arguments: json.RawMessage(`{}`)},
		json.RawMessage(`{"content":[{"type":"text","text":"hi"}],"structuredContent":{"n":12345678901234567890},"isError":true}`))
	require.NoError(t, d.Err)
	require.Len(t, d.Deny, 2)
	assert.Equal(t, "big", d.Deny[0].Message)
	assert.Equal(t, "carol echo hi true", d.Deny[1].Message)
	d = rev.Result(context.Background(), carol, engine.Request{Method: engine.MethodCall, Tool: "echo"}, json.RawMessage(`{"content":[],"a":1,"a":2}`))
	var ie *engine.InputError
	require.ErrorAs(t, d.Err, &ie, "a result that cannot be represented exactly is a failure")
	assert.Equal(t, engine.PartResult, ie.Part)
}

// TestInvalidConstantPatternIsALoadError: a redact rule's constant pattern
// that is no RE2 regular expression refuses the load, naming the pattern
// and where it is; one in data.json too.
func TestInvalidConstantPatternIsALoadError(t *testing.T) {
	t.Parallel()
	for name, files := range map[string]map[string]string{
		"a contains rule": {"result.rego": "package toolgate.result\n\nredact contains `ok`\n\nredact contains `a(?<!b)`\n"},
		"a set":           {"result.rego": "package toolgate.result\n\nredact := {`ok`, `a(?<!b)`}\n"},
		"data":            {"data.json": `{"toolgate": {"result": {"redact": ["a(?<!b)"]}}}`},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fsys := fstest.MapFS{"registry.yaml": {Data: []byte(testRegistry)}}
			for n, src := range files {
				fsys["policies/"+n] = &fstest.MapFile{Data: []byte(src)}
			}
			_, err := engine.New(context.Background(), engine.Source{FS: fsys, Registry: "registry.yaml", Policies: "policies"})
			require.Error(t, err)
			assert.Contains(t, err.Error(), "invalid regular expression \"a(?<!b)\"")
			var dl *diag.List
			require.True(t, errors.As(err, &dl))
			require.Len(t, dl.Diagnostics, 1)
			if name != "data" {
				assert.Equal(t, "policies/result.rego", dl.Diagnostics[0].File)
				assert.Positive(t, dl.Diagnostics[0].Line)
			}
		})
	}
}
