package console_test

import (
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/toolcall"
)

// TestTailShowsLimitedAndWithheld (docs/contract.md §18): a call a rate limit
// refused, and one whose result a rule withheld, reach the activity tail
// with their outcomes, which the page can filter by.
func TestTailShowsLimitedAndWithheld(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	hook := f.act.Hook()
	rev := f.eng.Current()
	caller := people["tok-contractor"]
	for _, o := range []toolcall.Outcome{toolcall.OutcomeLimited, toolcall.OutcomeWithheld} {
		call := &hooks.CallContext{DecisionID: "d-" + string(o), Name: "echo", Tool: rev.Tool("echo"), Method: rev.Tool("echo").Method,
			Arguments: json.RawMessage(`{}`), Meta: engine.BoundMeta(nil), Caller: caller, Revision: rev, Start: time.Now()}
		reason := "Rate limit exceeded: two a minute. Try again in 31 s."
		require.NoError(t, hook.After(t.Context(), call, &hooks.Record{Outcome: o, Result: mcpadapter.TextResult(reason, true)}))
	}
	var got []string
	for _, e := range f.act.Backlog() {
		got = append(got, e.Outcome)
	}
	assert.Equal(t, []string{"limited", "withheld"}, got)
	page, err := os.ReadFile("assets/index.html")
	require.NoError(t, err)
	for _, o := range toolcall.Outcomes {
		assert.Contains(t, string(page), "<option>"+string(o)+"</option>", "the outcome filter offers %s", o)
	}
}
