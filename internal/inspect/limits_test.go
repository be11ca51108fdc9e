package inspect

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/hooks/ledger"
	"github.com/toolgate/toolgate/store"
	"github.com/toolgate/toolgate/toolcall"
)

// TestExplainLimitWouldRefuse: explain shows which limit would refuse a
// call and its counter's state, from the store, without counting in it
// (docs/contract.md §18).
func TestExplainLimitWouldRefuse(t *testing.T) {
	t.Parallel()
	src := source(baseRegistry, map[string]string{
		"limits.rego": `package toolgate.call

limit contains {"key": sprintf("echo/%s", [input.caller.subject]), "max": 2, "per": "1m", "reason": "two a minute"} if input.tool.name == "echo"
`,
	})
	e, err := engine.New(context.Background(), src, engine.WithTimeout(time.Minute))
	require.NoError(t, err)
	ann := &toolcall.Caller{Subject: "ann", Roles: []string{"admin"}}
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	st := store.NewMemoryStore()
	lim := ledger.NewLimiter(st, func() time.Time { return now })
	for range 2 {
		ok, _, err := st.AdmitCall(context.Background(), []store.LimitRequest{{Key: "echo/ann", Max: 2, Per: time.Minute}}, now.Add(-15*time.Second))
		require.NoError(t, err)
		require.True(t, ok)
	}
	for range 2 { // explaining twice counts nothing
		x := Explain(context.Background(), ExplainOptions{Revision: e.Current(), Caller: ann, Tool: "echo", Limits: lim})
		require.NotNil(t, x.Call)
		assert.Equal(t, StageLimited, x.Call.Stage)
		assert.Equal(t, "Rate limit exceeded: two a minute. Try again in 45 s.", x.Call.Answer)
		require.Len(t, x.Call.Limits, 1)
		l := x.Call.Limits[0]
		assert.Equal(t, LimitExplanation{Limit: engine.Limit{Key: "echo/ann", Max: 2, Per: time.Minute, Reason: "two a minute",
			Rules: []engine.Location{{File: "rego/limits.rego", Row: 3, Col: 1}}}, Counted: true, Count: 2, Refuses: true, WaitSeconds: 45}, l)
		var out bytes.Buffer
		require.NoError(t, x.WriteText(&out))
		assert.Contains(t, out.String(), `limit     echo/ann: 2 per 1m0s, "two a minute" (rego/limits.rego:3); 2 of 2: refuses, admits again in 45 s`)
	}
	x := Explain(context.Background(), ExplainOptions{Revision: e.Current(), Caller: &toolcall.Caller{Subject: "bob", Roles: []string{}}, Tool: "echo", Limits: lim})
	assert.Equal(t, StageRun, x.Call.Stage, "another subject's counter is empty")
}

// failingStore is a limit store that cannot answer.
type failingStore struct{ store.LimitStore }

func (failingStore) PeekLimits(context.Context, []store.LimitRequest, time.Time) (bool, []store.LimitCount, error) {
	return false, nil, errors.New("connection refused")
}

// TestExplainLimitStoreFails: a store that cannot answer is what the call
// would get: the internal error, said why.
func TestExplainLimitStoreFails(t *testing.T) {
	t.Parallel()
	src := source(baseRegistry, map[string]string{
		"limits.rego": "package toolgate.call\n\nlimit contains {\"key\": \"k\", \"max\": 1, \"per\": \"1m\", \"reason\": \"r\"}\n",
	})
	e, err := engine.New(context.Background(), src, engine.WithTimeout(time.Minute))
	require.NoError(t, err)
	x := Explain(context.Background(), ExplainOptions{Revision: e.Current(), Caller: &toolcall.Caller{Subject: "ann", Roles: []string{}}, Tool: "echo",
		Limits: ledger.NewLimiter(failingStore{}, nil)})
	assert.Equal(t, string(toolcall.StageHookFailed), x.Call.Stage)
	assert.Equal(t, AnswerInternal, x.Call.Answer)
	assert.Contains(t, x.Call.Failure, "connection refused")
}
