package engine_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/internal/testkit/benchdata"
	"github.com/toolgate/toolgate/toolcall"
)

// TestSplitRowsMode pins which comprehensions have their rows split, and
// the shapes that are not: each of those is evaluated as before.
func TestSplitRowsMode(t *testing.T) {
	t.Parallel()
	const rows = "the rows of the comprehension at policies/grant.rego:3 up to its first condition on the request"
	printing := engine.WithLogger(slog.New(slog.DiscardHandler))
	for _, tc := range []struct {
		name, policy string
		split        bool
		opts         []engine.Option
	}{
		{"the benchmark's rows", benchdata.ReadsMetaPerRow[len("package toolgate.grant\n\n"):], true, nil},
		{"a filter, then the request", `granted := {t.name | some t in input.tools; t.base; not input.request.meta.hide == t.name}`, true, nil},
		{"an object", `granted := {n | some n in {t.name: t | some t in input.tools; t.base; not input.request.meta.hide == t.name}}`, true, nil},
		{"only the enumeration", `granted := {t.name | some t in input.tools; not input.request.meta.hide == t.name; t.base}`, false, nil},
		{"with", `granted := {t.name | some t in input.tools; admin with input.caller.roles as ["admin"]; not input.request.meta.hide == t.name}

admin if "admin" in input.caller.roles`, false, nil},
		{"non-deterministic", `granted := {t.name | some t in input.tools; time.now_ns() > 0; t.base; not input.request.meta.hide == t.name}`, false, nil},
		// A value computed once would print once.
		{"print", `granted := {t.name | some t in input.tools; print(t.name); t.base; not input.request.meta.hide == t.name}`, false, []engine.Option{printing}},
		{"print, off", `granted := {t.name | some t in input.tools; print(t.name); t.base; not input.request.meta.hide == t.name}`, true, nil},
		// n names a rule of the package: the rest would not see the local.
		{"a shared variable named like a rule", `granted := {n | some t in input.tools; n := t.name; t.base; n != input.request.tool}

n := "x"`, false, nil},
		// The compiler evaluates the request's conjunct before x > 0.
		{"reordered by the compiler", `granted := {t.name | some t in input.tools; x > 0; x = count(t.name); input.request.tool != t.name}`, false, nil},
		{"the request first", `granted := {t.name | some t in input.tools; input.request.tool != t.name; t.base}`, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			policies := map[string]string{"grant.rego": "package toolgate.grant\n\n" + tc.policy + "\n"}
			rev := newEngine(t, policies, tc.opts...).Current()
			_, why := rev.DecisionMode()
			if tc.split {
				require.Contains(t, why, rows)
			} else {
				require.NotContains(t, why, "the rows of")
			}
			// Whatever the mode, the answers are the whole evaluation's.
			w := newEngine(t, policies, append(tc.opts, engine.WithDecisionCache(false))...).Current()
			for _, c := range []*toolcall.Caller{alice, bob, carol, dave} {
				for _, meta := range []string{`{}`, `{"hide":"echo"}`} {
					req := engine.Request{Method: engine.MethodCall, Tool: "echo", Meta: engine.BoundMeta(json.RawMessage(meta))}
					want := w.Grant(context.Background(), c, req)
					for range 2 {
						requireSameGrant(t, want, rev.Grant(context.Background(), c, req), "echo", failedExactly)
					}
				}
			}
		})
	}
}

// TestSplitRowsOncePerCaller: the rows' prefix is computed by the caller's
// first call and kept; each later call evaluates only the rest, one
// evaluation per decision.
func TestSplitRowsOncePerCaller(t *testing.T) {
	t.Parallel()
	policy := "package toolgate.grant\n\ngranted := {t.name | some t in input.tools; t.base; not input.request.meta.hide == t.name}\n"
	rev := newEngine(t, map[string]string{"grant.rego": policy}).Current()
	ctx := context.Background()
	hide := func(name string) engine.Request {
		return engine.Request{Method: engine.MethodList, Meta: engine.BoundMeta(json.RawMessage(`{"hide":"` + name + `"}`))}
	}
	require.Zero(t, rev.Preloaded(dave))
	require.Equal(t, []string{"echo", "getReward", "execUrl"}, rev.Grant(ctx, dave, listReq).Granted())
	require.Equal(t, 1, rev.Preloaded(dave), "the rows are kept")
	for range 2 {
		require.Equal(t, []string{"getReward", "execUrl"}, rev.Grant(ctx, dave, hide("echo")).Granted())
		require.Equal(t, []string{"echo", "execUrl"}, rev.Grant(ctx, dave, hide("getReward")).Granted())
	}
	require.Equal(t, 1, rev.Preloaded(dave))
	require.EqualValues(t, 5, rev.Evaluations(), "one evaluation per decision")
	require.Equal(t, []string{"echo", "getReward", "report", "execUrl"}, rev.Grant(ctx, carol, listReq).Granted())
	require.Equal(t, 1, rev.Preloaded(carol), "another caller computes its own")
}

// TestSplitRowsFailures: a failure in either part of split rows is the
// whole evaluation's, to its message and location, also when the rest
// fails on an earlier row than the prefix does (the split computes the
// prefix first); a failing prefix keeps nothing.
func TestSplitRowsFailures(t *testing.T) {
	t.Parallel()
	helpers := `

one(_) := 1

one(t) := 2 if t.name == "report"
`
	for _, tc := range []struct {
		name, rows, meta string
		outcome          engine.Outcome
		kind             string
		line             int
	}{
		{"the prefix fails", `to_number(t.name) > 0; not input.request.meta.hide == t.name`, `{}`, engine.Failed, engine.KindBuiltin, 3},
		{"the rest fails", `t.base; to_number(input.request.meta.n) > 0`, `{"n":"x"}`, engine.Failed, engine.KindBuiltin, 3},
		// The rest fails on echo, the first row; the prefix on report.
		{"the rest fails first", `one(t) == 1; to_number(input.request.meta.n) > 0`, `{"n":"x"}`, engine.Failed, engine.KindBuiltin, 0},
		{"a conflict in the rows", `one(t) == 1; not input.request.meta.hide == t.name`, `{}`, engine.Failed, engine.KindEval, 7},
		{"undefined rows", `t.nothing.deep == 1; not input.request.meta.hide == t.name`, `{}`, engine.Override, "", 0},
		{"the prefix fails on a later row", `one(t) == 1; to_number(input.request.meta.n) > 0`, `{"n":"1"}`, engine.Failed, engine.KindEval, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			policy := "package toolgate.grant\n\ngranted := {t.name | some t in input.tools; " + tc.rows + "}" + helpers
			policies := map[string]string{"grant.rego": policy}
			rev := newEngine(t, policies).Current()
			_, why := rev.DecisionMode()
			require.Contains(t, why, "the rows of the comprehension")
			w := newEngine(t, policies, engine.WithDecisionCache(false)).Current()
			req := engine.Request{Method: engine.MethodList, Meta: engine.BoundMeta(json.RawMessage(tc.meta))}
			want := w.Grant(context.Background(), dave, req)
			require.Equal(t, tc.outcome, want.Outcome, "%v", want.Err)
			if tc.outcome == engine.Failed {
				var pe *engine.PolicyError
				require.ErrorAs(t, want.Err, &pe)
				require.Equal(t, tc.kind, pe.Kind, pe.Message)
				if tc.line > 0 {
					require.Equal(t, tc.line, pe.Location.Row, pe.Message)
				} else {
					require.Contains(t, pe.Message, "to_number", "the rest's failure, on the first row")
				}
				require.Zero(t, rev.Preloaded(dave))
			}
			for range 2 {
				requireSameGrant(t, want, rev.Grant(context.Background(), dave, req), "echo", failedExactly)
			}
		})
	}
}

// TestSplitRowsConcurrent shares the kept rows between goroutines (run
// with -race): every answer is the whole evaluation's.
func TestSplitRowsConcurrent(t *testing.T) {
	t.Parallel()
	policies := map[string]string{"grant.rego": "package toolgate.grant\n\n" + splitShapes[1] + "\n"}
	rev := newEngine(t, policies).Current()
	_, why := rev.DecisionMode()
	require.Contains(t, why, "the rows of the comprehension")
	whole := newEngine(t, policies, engine.WithDecisionCache(false)).Current()
	requireSameConcurrently(t, rev, whole, `{"hide":"echo"}`)
}
