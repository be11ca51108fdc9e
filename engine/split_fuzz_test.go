package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/toolcall"
)

// splitShapes are grant policies that read the request, each in a shape
// the split evaluation must answer exactly like the whole one: conditions
// outside and inside the per-row body, helper rules and functions, with,
// negation, built-in errors, conflicts, time.now_ns, non-set values.
var splitShapes = []string{
	// 0: a condition on _meta outside the per-row body.
	`granted := {t.name | some t in input.tools; t.base; not url(t)} if {
	"contractor" in input.caller.roles
	not input.request.meta.all == true
}

url(t) if t.driver == "url"`,
	// 1: the per-row body reads the request.
	`granted := {t.name | some t in input.tools; t.base; not input.request.meta.hide == t.name}`,
	// 2: a helper rule, a negation.
	`visible := {t.name | some t in input.tools; t.base}

granted := visible if not input.request.meta.deny`,
	// 3: a helper function in the comprehension; the method read outside.
	`ok(t) if startswith(t.name, "e")

ok(t) if t.section == "rewards"

granted := {t.name | some t in input.tools; ok(t)} if input.request.method == "tools/list"`,
	// 4: with on input, around a helper that is otherwise precomputed.
	`visible := {t.name | some t in input.tools; t.base}

granted := v if {
	v := visible with input.tools as [{"name": "echo", "base": true}]
	input.request.meta.w == 1
}

granted := visible if input.request.meta.w == 2`,
	// 5: with on a function, and on the request.
	`f(x) := x

flag if f(input.request.meta.k) == 1

granted := {t.name | some t in input.tools} if {
	flag with f as g
}

g(_) := 1`,
	// 6: a built-in error in the per-row body, for every caller.
	`granted := {t.name | some t in input.tools; to_number(t.name) > 0} if input.request.meta.n == 1`,
	// 7: a built-in error that depends on the request.
	`visible := {t.name | some t in input.tools; t.base}

granted := visible if to_number(input.request.meta.n) > 1`,
	// 8: a built-in error in a helper only some requests reach.
	`bad := {x | some t in input.tools; x := to_number(t.name)}

granted := bad if input.request.meta.y == true

granted := {"echo"} if input.request.meta.y == false`,
	// 9: a conflict between two complete definitions.
	`visible := {t.name | some t in input.tools; t.base}

granted := {"echo"} if input.request.meta.a == 1

granted := visible if input.request.meta.b == 1`,
	// 10: a conflict inside a precomputed helper, for one caller only.
	`h := 1

h := 2 if input.caller.subject == "bob"

granted := {t.name | some t in input.tools; h == 1} if input.request.meta.z != 0`,
	// 11: time.now_ns outside the rows, and in a helper.
	`recent if time.now_ns() > 0

granted := {t.name | some t in input.tools; t.base} if {
	recent
	input.request.tool != "nothing"
}`,
	// 12: time.now_ns inside a comprehension (never precomputed).
	`granted := {t.name | some t in input.tools; time.now_ns() > 0; t.base} if input.request.meta.t == true`,
	// 13: granted is not a set.
	`visible := {t.name | some t in input.tools; t.base}

granted := count(visible) if input.request.meta.n == 1

granted := visible if input.request.meta.n == 2`,
	// 14: an else chain and a default.
	`visible := {t.name | some t in input.tools; t.base}

default granted := set()

granted := visible if {
	input.request.meta.e == 1
} else := {"echo"} if {
	input.caller.subject == "bob"
}`,
	// 15: claims and roles in the rows.
	`granted := {t.name | some t in input.tools; t.name in object.get(input.caller, ["claims", "tools"], [])} if input.request.meta.c != 1`,
	// 16: a partial set helper that reads the request.
	`hide contains n if some n in input.request.meta.hide

granted := {t.name | some t in input.tools; not t.name in hide}`,
	// 17: an object comprehension whose keys may collide.
	`by_section := {s: t.name | some t in input.tools; t.base; s := object.get(t, "section", "")}

granted := {n | some n in by_section} if input.request.meta.o == 1`,
	// 18: a comprehension inside a function, and a variable it captures.
	`names(_) := {t.name | some t in input.tools; t.base}

granted := names(1) | {t.name | some t in input.tools; t.section == s} if {
	s := input.request.meta.section
}`,
	// 19: nested comprehensions; the outer reads the request.
	`granted := {n | some n in {t.name | some t in input.tools; t.base}; n != input.request.tool}`,
	// 20: names no row has, and a non-string element.
	`granted := {"echo", "ghost"} if input.request.meta.g == 1

granted := {"echo", 7} if input.request.meta.g == 2`,
	// 21: the whole input.
	`granted := {t.name | some t in input.tools} if count(input) > 2`,
	// 22: a default holding a comprehension.
	`default granted := {n | some n in ["echo"]}

granted := {t.name | some t in input.tools; t.base} if input.request.meta.d == 1`,
}

var splitEngines sync.Map // shape index → [2]*engine.Engine{split, whole}

func splitEnginesFor(t testing.TB, shape int) (split, whole *engine.Revision) {
	if v, ok := splitEngines.Load(shape); ok {
		e := v.([2]*engine.Engine)
		return e[0].Current(), e[1].Current()
	}
	policies := map[string]string{"grant.rego": "package toolgate.grant\n\n" + splitShapes[shape] + "\n"}
	e := [2]*engine.Engine{newEngine(t, policies), newEngine(t, policies, engine.WithDecisionCache(false))}
	v, _ := splitEngines.LoadOrStore(shape, e)
	e = v.([2]*engine.Engine)
	return e[0].Current(), e[1].Current()
}

// FuzzSplitEquivalence checks that the split evaluation of a grant policy
// (the caller-dependent part once per caller, the rest per call) answers
// exactly like the whole evaluation: the same outcome, the same granted and
// override sets, the same failure or none. Each request is asked twice of
// the split revision, so that both a fresh and a memoised residual answer.
// Seeds live in testdata/fuzz/FuzzSplitEquivalence.
func FuzzSplitEquivalence(f *testing.F) {
	seeds := []string{
		`{}`, `{"all":true}`, `{"hide":"echo"}`, `{"deny":true}`, `{"w":1}`, `{"w":2}`, `{"k":1}`,
		`{"n":1}`, `{"n":"3"}`, `{"n":"x"}`, `{"y":true}`, `{"y":false}`, `{"a":1,"b":1}`, `{"b":1}`,
		`{"z":1}`, `{"t":true}`, `{"n":2}`, `{"e":1}`, `{"c":1}`, `{"hide":["echo","report"]}`,
		`{"o":1}`, `{"section":"rewards"}`, `{"g":1}`, `{"g":2}`, `null`,
	}
	for shape := range splitShapes {
		for i, meta := range seeds {
			if i%5 == shape%5 || i == shape%len(seeds) {
				f.Add(uint8(shape), uint8(i), uint8(i*7), i%2 == 0, []string{"echo", "report", "ghost", ""}[i%4], []byte(meta))
			}
		}
	}
	f.Fuzz(func(t *testing.T, shape, subject, roles uint8, list bool, tool string, meta []byte) {
		split, whole := splitEnginesFor(t, int(shape)%len(splitShapes))
		requireSplitAsWhole(t, split, whole, failedAlike, subject, roles, list, tool, meta)
	})
}

// requireSplitAsWhole asks whole once and split twice (so that both a
// fresh and a kept residual answer) the question a split fuzzer's values
// describe, and requires each split answer to be the whole's, failures
// matched as match says. subject picks one of four callers; the low three
// bits of roles its roles, the fourth its claims; list asks for the tool
// list, otherwise for a call of tool; meta is the request's _meta.
func requireSplitAsWhole(t *testing.T, split, whole *engine.Revision, match failureMatch, subject, roles uint8, list bool, tool string, meta []byte) {
	t.Helper()
	c := &toolcall.Caller{Subject: []string{"alice", "bob", "carol", "dave"}[subject%4]}
	for i, r := range []string{"manager", "admin", "contractor"} {
		if roles&(1<<i) != 0 {
			c.Roles = append(c.Roles, r)
		}
	}
	if roles&8 != 0 {
		c.Claims = map[string]any{"tools": []any{"echo", "report"}}
	}
	req := engine.Request{Method: engine.MethodList, Meta: engine.BoundMeta(json.RawMessage(meta))}
	if !list {
		req.Method, req.Tool, req.Arguments = engine.MethodCall, tool, json.RawMessage(`{"text":"hi"}`)
	}
	ctx := context.Background()
	want := whole.Grant(ctx, c, req)
	for range 2 {
		requireSameGrant(t, want, split.Grant(ctx, c, req), tool, match)
	}
}

// failureMatch is how alike two grant decisions' failures must be.
type failureMatch bool

const (
	// failedAlike: both fail, or neither does.
	failedAlike failureMatch = false
	// failedExactly: the same failure, to its kind, code, message and
	// location.
	failedExactly failureMatch = true
)

// requireSameGrant requires two grant decisions to answer alike: the same
// outcome, granted and override sets, and the same answer for each of the
// registry's tools and tool, failures matched as match says.
func requireSameGrant(t testing.TB, want, got *engine.GrantDecision, tool string, match failureMatch) {
	t.Helper()
	require.Equal(t, want.Outcome, got.Outcome, "outcome; whole failed with %v, split with %v", want.Err, got.Err)
	switch {
	case match == failedAlike:
		require.Equal(t, want.Err != nil, got.Err != nil, "failure: whole %v, split %v", want.Err, got.Err)
	case want.Err == nil || got.Err == nil:
		require.Equal(t, want.Err, got.Err)
	default:
		require.Equal(t, want.Err.Error(), got.Err.Error())
		var wp, gp *engine.PolicyError
		require.Equal(t, errors.As(want.Err, &wp), errors.As(got.Err, &gp))
		if wp != nil {
			require.Equal(t, [4]any{wp.Rule, wp.Kind, wp.Code, wp.Location}, [4]any{gp.Rule, gp.Kind, gp.Code, gp.Location})
			require.Equal(t, wp.Message, gp.Message)
		}
	}
	require.Equal(t, want.Granted(), got.Granted())
	require.Equal(t, want.OverrideSet(), got.OverrideSet())
	for _, name := range []string{"echo", "getReward", "report", "orphan", "execUrl", "ghost", tool} {
		w, werr := want.Allowed(name)
		g, gerr := got.Allowed(name)
		require.Equal(t, w, g, name)
		if match == failedAlike {
			require.Equal(t, werr != nil, gerr != nil, name)
		} else {
			require.Equal(t, errString(werr), errString(gerr), name)
		}
		require.Equal(t, want.Visible(name), got.Visible(name), name)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
