package mcpadapter_test

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/example/demo"
	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/internal/inspect"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/toolcall"
)

// approvalID is the request id in an approval answer: the store's when
// served, "<id>" in a dry run.
var approvalID = regexp.MustCompile(`\(approval [^)]*\)`)

// TestExplainAgreesWithTheServedCall runs every conformance fixture
// through the served pipeline (over the wire, as TestConformance does) and
// through `explain` (inspect.Explain, a dry run of the same pipeline), and
// compares: the stage, the answer and the rules behind it are the same.
// Where explain says the method would run, the served call ran it. A dry
// run runs no Go hook, so a fixture's before hooks are left out of its
// served run here (TestConformance serves them).
func TestExplainAgreesWithTheServedCall(t *testing.T) {
	t.Parallel()
	for _, f := range loadFixtures(t) {
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			s := f.setup
			s.hooks = nil
			for _, h := range f.setup.hooks {
				if strings.HasPrefix(h, "after-") {
					s.hooks = append(s.hooks, h)
				}
			}
			g := newGoverned(t, s)
			c := g.connectRaw(t, proto20250618)
			served := toolResult(t, c.call(f.Params))
			var rec *hooks.Record
			g.after.mu.Lock()
			heard := len(g.after.ends) > 0
			g.after.mu.Unlock()
			if heard {
				e := g.after.lastEnd(t)
				rec = &e
			}

			name, nameOK, args, meta := readParams(t, f.Params)
			if !nameOK {
				// explain asks about a named tool; the pipeline's dry run
				// answers a nameless call as served.
				dry := mcpadapter.DryRun(context.Background(), mcpadapter.DryRunOptions{Revision: g.eng.Current(), Caller: s.caller, NameInvalid: true})
				require.Equal(t, toolcall.StageNameRequired, dry.Stage)
				require.Equal(t, resultText(t, served), dry.Answer())
				require.Nil(t, rec, "no hook hears of a nameless call")
				return
			}
			x := inspect.Explain(context.Background(), inspect.ExplainOptions{
				Revision: g.eng.Current(), Caller: s.caller, Tool: name,
				Arguments: args, Meta: meta, Methods: demo.Methods(),
			})
			require.NotNil(t, x.Call)
			if x.Call.Stage == inspect.StageRun {
				require.NotNil(t, rec, "a call explain says runs reaches the hooks")
				// It ran; the result rules may then withhold its result
				// (docs/contract.md §18), which explain tells only given a result.
				require.Contains(t, []toolcall.Stage{toolcall.StageRun, toolcall.StageWithheld, toolcall.StageResultFailed}, rec.Stage,
					"explain says the method runs: it ran")
				require.True(t, rec.Bound)
				require.True(t, x.Call.Bound, "explain bound the arguments as served")
				return
			}
			want := approvalID.ReplaceAllString(resultText(t, served), "(approval <id>)")
			require.Equal(t, want, x.Call.Answer, "explain's answer is the served one\n%s", f.Comment)
			switch x.Call.Stage {
			case inspect.StageNobody, inspect.StageUnknown:
				require.Nil(t, rec, "no hook hears of an unknown tool")
			default:
				require.NotNil(t, rec)
				require.Equal(t, x.Call.Stage, string(rec.Stage))
				require.Equal(t, x.Call.Rules, rec.DecidingRules(), "the same rules decided")
			}
		})
	}
}

// readParams reads the tools/call params of a fixture as explain is asked:
// the name (an integer as its decimal string; nameOK false when there is
// no usable one), the arguments as sent (null when absent: read as {}, as
// served) and _meta as sent.
func readParams(t *testing.T, params string) (name string, nameOK bool, args, meta json.RawMessage) {
	t.Helper()
	var p map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(params), &p))
	args, meta = p["arguments"], p["_meta"]
	if args == nil {
		args = json.RawMessage("null")
	}
	raw := bytes.TrimSpace(p["name"])
	switch {
	case len(raw) > 0 && raw[0] == '"':
		err := json.Unmarshal(raw, &name)
		return name, err == nil, args, meta
	case regexp.MustCompile(`^-?[0-9]+$`).Match(raw):
		return string(raw), true, args, meta
	}
	return "", false, args, meta
}
