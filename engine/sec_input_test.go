package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/toolcall"
)

// unrepresentable are arguments objects the input document cannot hold
// exactly (docs/contract.md §3): each used to reach policies as {} (or as another
// object) while the binder passed the real url to the method.
var unrepresentable = map[string]string{
	"huge exponent, undeclared":   `{"url":"http://169.254.169.254/latest/meta-data/","x":1e100000}`,
	"negative huge exponent":      `{"url":"http://169.254.169.254/","x":-1e99999999999}`,
	"nested in an array":          `{"url":"http://169.254.169.254/","x":[1e4567890]}`,
	"nested deep":                 `{"url":"http://169.254.169.254/","x":{"y":[{"z":[0,1e100000]}]}}`,
	"in the declared argument":    `{"url":[1e100000]}`,
	"duplicate key":               `{"url":"http://ok.example/","url":"http://169.254.169.254/"}`,
	"duplicate key by escape":     `{"url":"http://ok.example/","u\u0072l":"http://169.254.169.254/"}`,
	"duplicate key nested":        `{"url":"http://169.254.169.254/","x":{"a":1,"a":2}}`,
	"lone high surrogate":         `{"url":"http://169.254.169.254/\ud800"}`,
	"lone low surrogate in a key": `{"url":"http://169.254.169.254/","\udc00":1}`,
	"invalid UTF-8":               "{\"url\":\"http://169.254.169.254/\xff\"}",
}

// TestArgumentsThePolicyCannotSeeFailTheDecision: a tools/call whose
// arguments cannot be represented exactly fails the grant decision (step 3
// answers "could not be verified"), for every name alike, with the cache
// on and off, and whatever the policy reads; the call rules never see a
// substitute.
func TestArgumentsThePolicyCannotSeeFailTheDecision(t *testing.T) {
	cacheModes(t, testSec01Arguments)
}

func testSec01Arguments(t *testing.T, opts ...engine.Option) {
	// A grant policy that reads only the caller (cacheable) and one that
	// reads the arguments (not cacheable): both must fail.
	for pname, grant := range map[string]string{
		"no policy": "",
		"caller only": `package toolgate.grant

granted := {"execUrl", "echo"} if "manager" in input.caller.roles
`,
		"reads arguments": `package toolgate.grant

granted := {"execUrl", "echo"} if not startswith(object.get(input.request.arguments, "url", ""), "http://169.254.")
`,
	} {
		policies := map[string]string{"call.rego": `package toolgate.call

deny contains "no metadata endpoint" if startswith(input.request.arguments.url, "http://169.254.")
`}
		if grant != "" {
			policies["grant.rego"] = grant
		}
		rev := newEngine(t, policies, opts...).Current()
		for name, args := range unrepresentable {
			for _, tool := range []string{"execUrl", "report", "noSuchTool"} {
				req := engine.Request{Method: engine.MethodCall, Tool: tool, Arguments: json.RawMessage(args)}
				d := rev.Grant(context.Background(), alice, req)
				require.Equal(t, engine.Failed, d.Outcome, "%s / %s / %s", pname, name, tool)
				ok, err := d.Allowed(tool)
				require.False(t, ok)
				var pe *engine.PolicyError
				require.ErrorAs(t, err, &pe)
				require.Equal(t, engine.KindInput, pe.Kind)
				require.True(t, errors.Is(err, engine.ErrInput), "%v", err)
				var ie *engine.InputError
				require.ErrorAs(t, err, &ie)
				require.Equal(t, engine.PartArguments, ie.Part)
				require.NotContains(t, err.Error(), "169.254", "argument values are never in an error")

				// The call rules refuse to evaluate too, rather than see {}.
				cd := rev.Call(context.Background(), alice, req)
				require.ErrorIs(t, cd.Err, engine.ErrInput, "%s / %s", pname, name)
				require.Empty(t, cd.Deny)
			}
		}
		// The same url, representable, is denied by the call rule.
		req := engine.Request{Method: engine.MethodCall, Tool: "execUrl", Arguments: json.RawMessage(`{"url":"http://169.254.169.254/","x":1e300}`)}
		cd := rev.Call(context.Background(), alice, req)
		require.NoError(t, cd.Err)
		require.Len(t, cd.Deny, 1)
	}
}

// TestArgumentsRepresentedExactly: what the input document holds is
// what was sent, numbers as their exact text; non-objects are {}.
func TestArgumentsRepresentedExactly(t *testing.T) {
	t.Parallel()
	rev := newEngine(t, nil).Current()
	for args, want := range map[string]string{
		`{"url":"http://x/\u00e9\ud83d\ude00","n":12345678901234567890.5e10,"a":[1e300,{"b":null}]}`: `{"url":"http://x/é😀","n":12345678901234567890.5e10,"a":[1e300,{"b":null}]}`,
		`[1e100000]`: `{}`,
		`"x"`:        `{}`,
		``:           `{}`,
		`{"a":`:      `{}`,
	} {
		doc, err := rev.InputDocument(alice, engine.Request{Method: engine.MethodCall, Tool: "echo", Arguments: json.RawMessage(args)}, false)
		require.NoError(t, err, args)
		var in struct {
			Request struct {
				Arguments json.RawMessage `json:"arguments"`
			} `json:"request"`
		}
		require.NoError(t, json.Unmarshal(doc, &in))
		require.JSONEq(t, want, string(in.Request.Arguments), args)
	}
	_, err := rev.InputDocument(alice, engine.Request{Method: engine.MethodCall, Tool: "echo", Arguments: json.RawMessage(`{"x":1e100000}`)}, false)
	require.ErrorIs(t, err, engine.ErrInput)
}

// TestClaimsThePolicyCannotSeeFailTheDecision: claims that cannot be
// represented (a float that is not finite, a number beyond OPA's range,
// invalid UTF-8) used to become {} (or "+Inf") in the input; every decision
// for such a caller fails instead, and CheckClaims says so up front.
func TestClaimsThePolicyCannotSeeFailTheDecision(t *testing.T) {
	cacheModes(t, func(t *testing.T, opts ...engine.Option) {
		rev := newEngine(t, map[string]string{"grant.rego": `package toolgate.grant

granted := {"echo"} if input.caller.claims.level < 3
`}, opts...).Current()
		for name, claims := range map[string]map[string]any{
			"inf":          {"level": math.Inf(1)},
			"nan":          {"level": math.NaN()},
			"huge":         {"level": json.Number("1e100000")},
			"nested inf":   {"team": map[string]any{"levels": []any{1, math.Inf(-1)}}},
			"invalid utf8": {"team": "\xff"},
		} {
			c := &toolcall.Caller{Subject: "eve", Roles: []string{"manager"}, Claims: claims}
			err := engine.CheckClaims(claims)
			var ie *engine.InputError
			require.ErrorAs(t, err, &ie, name)
			require.Equal(t, engine.PartClaims, ie.Part)
			for _, req := range []engine.Request{listReq, {Method: engine.MethodCall, Tool: "echo", Arguments: json.RawMessage(`{}`)}} {
				d := rev.Grant(context.Background(), c, req)
				require.Equal(t, engine.Failed, d.Outcome, name)
				require.ErrorIs(t, d.Err, engine.ErrInput)
				require.True(t, strings.Contains(d.Err.Error(), "caller.claims"), "%v", d.Err)
			}
		}
		require.NoError(t, engine.CheckClaims(map[string]any{"level": 2.5, "n": json.Number("12345678901234567890"), "r": []string{"a"}}))
	})
}
