package mcpadapter_test

import (
	"bytes"
	"context"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/toolcall"
)

// seen is what one observer was told.
type seen struct {
	mu    sync.Mutex
	calls []seenCall
	lists []hooks.ListRecord
}

type seenCall struct {
	id, name string
	rev      toolcall.Revision
	rec      hooks.Record
	// afterRan is how many after hooks the test's recording hook had seen
	// when the observer was told.
	afterRan int
}

func observe(g *governed) *seen {
	s := &seen{}
	g.adapter.AddObserver(hooks.Observer{
		Name: "test",
		Call: func(_ context.Context, call *hooks.CallContext, rec *hooks.Record) {
			n := len(g.after.outcomes())
			s.mu.Lock()
			defer s.mu.Unlock()
			s.calls = append(s.calls, seenCall{id: call.DecisionID, name: call.Name, rev: call.Revision, rec: *rec, afterRan: n})
		},
		List: func(_ context.Context, l *hooks.ListRecord) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.lists = append(s.lists, *l)
		},
	})
	return s
}

func (s *seen) snapshot() ([]seenCall, []hooks.ListRecord) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]seenCall(nil), s.calls...), append([]hooks.ListRecord(nil), s.lists...)
}

// Every grant decision is observed exactly once (SPEC §14): a listing, a
// call that ran, and the step 4 refusals of a hidden name and of a name no
// row has, told alike. An accepted call is told after its after hooks.
func TestObserverHearsEveryGrantDecision(t *testing.T) {
	t.Parallel()
	max := &toolcall.Caller{Subject: "max", Roles: []string{"manager"}}
	g := newGoverned(t, setup{caller: max})
	s := observe(g)
	cs := g.connectSDK(t, proto20250618, nil)
	ctx := context.Background()

	l, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	for _, name := range []string{"add", "execUrl", "absentToolName"} {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{"a": 1, "b": 2}})
		require.NoError(t, err)
	}

	calls, lists := s.snapshot()
	require.Len(t, lists, 1)
	listed := []string{}
	for _, tool := range l.Tools {
		listed = append(listed, tool.Name)
	}
	require.Equal(t, listed, lists[0].Listed)
	require.Equal(t, max, lists[0].Caller)
	require.Equal(t, g.eng.Current(), lists[0].Revision)
	require.NotEqual(t, toolcall.GrantFailed, lists[0].Outcome, "the listing tells its grant decision")

	require.Len(t, calls, 3)
	add, hidden, absent := calls[0], calls[1], calls[2]
	require.Equal(t, "add", add.name)
	require.Equal(t, toolcall.StageRun, add.rec.Stage)
	require.Equal(t, toolcall.OutcomeResult, add.rec.Outcome)
	require.True(t, add.rec.Grant.Granted)
	require.Equal(t, 1, add.afterRan, "the observer is told after the after hooks")
	require.Equal(t, g.eng.Current(), add.rev)

	for _, c := range []seenCall{hidden, absent} {
		require.Equal(t, toolcall.StageUnknown, c.rec.Stage, c.name)
		require.Equal(t, toolcall.Outcome(""), c.rec.Outcome, c.name)
		require.False(t, c.rec.Grant.Granted, c.name)
		require.Equal(t, toolcall.ByGate, c.rec.Answerer.Kind, c.name)
		require.NotEmpty(t, c.id, c.name)
	}
	require.Equal(t, "Error: Unknown tool 'execUrl'.", hidden.rec.Answer())
	require.Equal(t, "Error: Unknown tool 'absentToolName'.", absent.rec.Answer())
	require.Equal(t, 1, absent.afterRan, "no after hook hears of a step 4 refusal")
}

// Nobody signed in (step 2) and a call without a name (step 1) take no
// grant decision: no observer hears of them, nor of nobody's listing.
func TestObserverNotToldWithoutGrantDecision(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		caller *toolcall.Caller
		params string
	}{
		{"nobody", nil, `{"name":"add","arguments":{"a":1,"b":2}}`},
		{"no name", &toolcall.Caller{Subject: "max", Roles: []string{"manager"}}, `{"arguments":{}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := newGoverned(t, setup{caller: tc.caller})
			s := observe(g)
			c := g.connectRaw(t, proto20250618)
			res := toolResult(t, c.call(tc.params))
			require.True(t, res.IsError)
			if tc.caller == nil {
				c.roundTrip(`{"jsonrpc":"2.0","id":99,"method":"tools/list","params":{}}`)
			}
			calls, lists := s.snapshot()
			require.Empty(t, calls)
			require.Empty(t, lists)
		})
	}
}

// A grant decision that fails (step 3) is observed once, with the failure;
// the listing that fell back is observed with its fallback.
func TestObserverHearsFailedGrantDecision(t *testing.T) {
	t.Parallel()
	conflict := "package toolgate.grant\n\ngranted := {\"echo\"} if input.caller\n\ngranted := {\"add\"} if input.caller\n"
	g := newGoverned(t, setup{caller: &toolcall.Caller{Subject: "ann", Roles: []string{"admin"}}, policies: map[string]string{"grant.rego": conflict}})
	s := observe(g)
	cs := g.connectSDK(t, proto20250618, nil)
	ctx := context.Background()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "add", Arguments: map[string]any{"a": 1, "b": 2}})
	require.NoError(t, err)
	require.Equal(t, mcpadapter.AnswerNotVerified, resultText(t, res))
	_, err = cs.ListTools(ctx, nil)
	require.NoError(t, err)

	calls, lists := s.snapshot()
	require.Len(t, calls, 1)
	require.Equal(t, toolcall.StageNotVerified, calls[0].rec.Stage)
	require.Equal(t, engine.Failed, calls[0].rec.Grant.Outcome)
	require.Error(t, calls[0].rec.Grant.Err)
	require.Len(t, lists, 1)
	require.Equal(t, engine.Failed, lists[0].Outcome)
	require.Equal(t, hooks.ListFallbackBase, lists[0].Fallback)
}

// An observer that panics changes no answer: hidden and absent stay
// byte-identical, a granted call answers as without it, and the panic is
// logged.
func TestObserverPanicIgnored(t *testing.T) {
	t.Parallel()
	g := newGoverned(t, setup{caller: &toolcall.Caller{Subject: "max", Roles: []string{"manager"}}})
	g.adapter.AddObserver(hooks.Observer{
		Name: "boom",
		Call: func(context.Context, *hooks.CallContext, *hooks.Record) { panic("boom") },
		List: func(context.Context, *hooks.ListRecord) { panic("boom") },
	})
	s := observe(g) // a later observer is still told
	c := g.connectRaw(t, proto20250618)
	const args = `"arguments":{"a":1,"b":2},"_meta":{"k":"v"}`
	hid := normaliseID(c.call(`{"name":"execUrl",` + args + `}`))
	abs := normaliseID(c.call(`{"name":"absentToolName",` + args + `}`))
	require.Equal(t, string(abs), string(bytes.Replace(hid, []byte("'execUrl'"), []byte("'absentToolName'"), 1)))
	require.Equal(t, "3", resultText(t, toolResult(t, c.call(`{"name":"add",`+args+`}`))))
	c.roundTrip(`{"jsonrpc":"2.0","id":99,"method":"tools/list","params":{}}`)
	calls, lists := s.snapshot()
	require.Len(t, calls, 3)
	require.Len(t, lists, 1)
	require.Contains(t, g.logs.String(), "decision observer failed; ignored")
}
