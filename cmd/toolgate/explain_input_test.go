package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/stretchr/testify/require"
)

// TestExplainInputIsWhatThePolicySees: the document `explain --input`
// prints, given to the stock OPA evaluation of the same policies (as
// `opa eval -i`), gives the decision toolgate takes for that caller and
// request: the grant override set and the call rules' approval. A member
// missing from the printed input, or one the server does not give, would
// make them differ.
func TestExplainInputIsWhatThePolicySees(t *testing.T) {
	const reg, pol = "../../example/registry.yaml", "../../rego"
	explain := func(args ...string) []byte {
		var out, errOut bytes.Buffer
		code := run(context.Background(), &env{args: append([]string{"explain", "--registry", reg, "--policy", pol}, args...),
			stdin: strings.NewReader(""), stdout: &out, stderr: &errOut})
		require.Equal(t, 0, code, errOut.String())
		return out.Bytes()
	}
	eval := func(query string, input []byte) (any, bool) {
		var in any
		require.NoError(t, json.Unmarshal(input, &in))
		rs, err := rego.New(rego.Query(query), rego.Load([]string{pol}, nil), rego.Input(in)).Eval(t.Context())
		require.NoError(t, err)
		if len(rs) == 0 {
			return nil, false
		}
		return rs[0].Expressions[0].Value, true
	}
	for _, c := range []struct {
		name   string
		caller []string
	}{
		{"contractor: an override", []string{"--as", "carl", "--role", "manager", "--role", "contractor"}},
		{"manager: no override", []string{"--as", "max", "--role", "manager"}},
		{"admin contractor", []string{"--as", "ann", "--role", "admin", "--role", "contractor"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var x struct {
				Mode        string   `json:"mode"`
				OverrideSet []string `json:"override_set"`
			}
			require.NoError(t, json.Unmarshal(explain(append(c.caller, "--format", "json")...), &x))
			got, defined := eval("data.toolgate.grant.granted", explain(append(c.caller, "--input")...))
			require.Equal(t, x.Mode == "override", defined, "override or not")
			if defined {
				var names []string
				for _, n := range got.([]any) {
					names = append(names, n.(string))
				}
				require.ElementsMatch(t, x.OverrideSet, names)
			}
		})
	}
	// A call: the call rules see the resolved row as tool, so the
	// destructive tool's approval is what the server holds the call for.
	in := explain("--as", "ann", "--role", "admin", "--tool", "resetCounter", "--args", `{"key": "k"}`, "--input")
	approval, ok := eval("data.toolgate.call.approval", in)
	require.True(t, ok, "the call rules hold resetCounter for the input explain printed")
	require.Equal(t, "Tool 'resetCounter' is destructive and needs an admin's approval", approval.(map[string]any)["reason"])
	_, ok = eval("data.toolgate.call.approval", explain("--as", "ann", "--role", "admin", "--tool", "echo", "--args", `{"text": "x"}`, "--input"))
	require.False(t, ok, "echo is not held")
}
