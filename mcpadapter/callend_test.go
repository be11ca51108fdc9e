package mcpadapter_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/toolcall"
)

// lastEnd returns the one Record the recording after hook saw.
func (l *afterLog) lastEnd(t testing.TB) hooks.Record {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	require.Len(t, l.ends, 1, "the after hooks see the call exactly once")
	return l.ends[0]
}

// TestAfterHooksSeeTheCallsDuration: the duration an after hook gets is the
// call's own wall-clock time (docs/contract.md §5 step 8), for every outcome. The call
// is made to take at least minimum (a method or before hook that sleeps: the
// sleep is what is measured, not a synchronisation), and the duration can
// be no longer than the round trip the client saw. Both bounds follow from
// the order of events, not from how fast the machine is.
func TestAfterHooksSeeTheCallsDuration(t *testing.T) {
	t.Parallel()
	const minimum = 30 * time.Millisecond
	slow := func(v hooks.Verdict, err error) hooks.Hook {
		return hooks.Hook{Name: "slow", Before: func(context.Context, *hooks.CallContext) (hooks.Verdict, error) {
			time.Sleep(minimum)
			return v, err
		}}
	}
	cases := []struct {
		name    string
		hook    *hooks.Hook
		params  string
		outcome toolcall.Outcome
	}{
		{"result", nil, fmt.Sprintf(`{"name":"sleep","arguments":{"ms":%d}}`, minimum.Milliseconds()), toolcall.OutcomeResult},
		{"denied", new(slow(hooks.Deny("no."), nil)), `{"name":"echo","arguments":{"text":"x"}}`, toolcall.OutcomeDenied},
		{"answered", new(slow(hooks.Answer(mcpadapter.TextResult("hi", false)), nil)), `{"name":"echo","arguments":{"text":"x"}}`, toolcall.OutcomeAnswered},
		{"failed", new(slow(hooks.Verdict{}, errors.New("hook failed"))), `{"name":"echo","arguments":{"text":"x"}}`, toolcall.OutcomeFailed},
		{"failed binding", new(slow(hooks.Allow(), nil)), `{"name":"echo","arguments":{}}`, toolcall.OutcomeFailed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// The slow hooks get a generous deadline: a loaded machine must
			// not turn their sleep into a hook failure.
			s := setup{caller: &toolcall.Caller{Subject: "max", Roles: []string{"manager"}}, hookTimeout: time.Minute}
			if tc.hook != nil {
				s.extraHooks = []hooks.Hook{*tc.hook}
			}
			g := newGoverned(t, s)
			c := g.connectRaw(t, proto20250618)
			sent := time.Now()
			c.call(tc.params)
			roundTrip := time.Since(sent)
			end := g.after.lastEnd(t)
			require.Equal(t, tc.outcome, end.Outcome)
			require.GreaterOrEqual(t, end.Duration, minimum, "the duration covers the call")
			require.LessOrEqual(t, end.Duration, roundTrip, "the duration is this call's")
			require.LessOrEqual(t, end.Decision(), end.Duration, "the decisions are part of the call")
			require.InDelta(t, float64(end.Duration.Microseconds())/1000, end.DurationMS(), 1e-9)
		})
	}
	t.Run("refused at the gate", func(t *testing.T) {
		t.Parallel()
		g := newGoverned(t, setup{
			caller:   &toolcall.Caller{Subject: "max", Roles: []string{"manager"}},
			policies: map[string]string{"grant.rego": "package toolgate.grant\n\ngranted := {\"echo\"} if input.caller\n\ngranted := {\"add\"} if input.caller\n"},
		})
		c := g.connectRaw(t, proto20250618)
		sent := time.Now()
		c.call(`{"name":"echo","arguments":{"text":"x"}}`)
		roundTrip := time.Since(sent)
		end := g.after.lastEnd(t)
		require.Equal(t, toolcall.OutcomeRefusedGate, end.Outcome)
		require.Positive(t, end.Decision(), "the grant decision was evaluated")
		require.GreaterOrEqual(t, end.Duration, end.Decision(), "the duration covers the decision")
		require.LessOrEqual(t, end.Duration, roundTrip, "the duration is this call's")
	})
}

// callDenials are toolgate.call rules that refuse on _meta "deny", with
// two reasons that sort differently from the order they are written in.
const callDenials = `package toolgate.call

deny contains "Rule z refuses." if input.request.meta.deny == true

deny contains "Rule a refuses." if input.request.meta.deny == true
`

// TestAfterHooksSeeEveryDenyReason: an after hook of a refused call gets
// every reason, the hooks' in registration order then the rules' sorted
// (docs/contract.md §5 step 5), who refused first, and the answer the caller got; a
// call nothing refused carries no reasons.
func TestAfterHooksSeeEveryDenyReason(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		hooks      []string
		meta       string
		tool       string
		reasons    []string
		answeredBy string
	}{
		{"hooks and rules", []string{"deny:Hook two says no.", "deny:Hook one says no."}, `{"deny":true}`, "echo",
			[]string{"Hook two says no.", "Hook one says no.", "Rule a refuses.", "Rule z refuses."}, "deny:Hook two says no."},
		{"a hook alone", []string{"deny:Only the hook."}, `{}`, "echo", []string{"Only the hook."}, "deny:Only the hook."},
		{"rules alone", nil, `{"deny":true}`, "echo", []string{"Rule a refuses.", "Rule z refuses."}, "policy"},
		{"an answer loses to a refusal", []string{"answer:ignored", "deny:Refused."}, `{}`, "echo", []string{"Refused."}, "deny:Refused."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := newGoverned(t, setup{
				caller:   &toolcall.Caller{Subject: "ann", Roles: []string{"admin"}},
				hooks:    tc.hooks,
				policies: map[string]string{"denials.rego": callDenials},
			})
			c := g.connectRaw(t, proto20250618)
			res := toolResult(t, c.call(fmt.Sprintf(`{"name":%q,"arguments":{"text":"x","key":"k"},"_meta":%s}`, tc.tool, tc.meta)))
			end := g.after.lastEnd(t)
			require.Equal(t, toolcall.OutcomeDenied, end.Outcome)
			require.Equal(t, tc.reasons, end.Reasons(), "every reason, in order")
			require.Equal(t, tc.answeredBy, end.AnsweredBy())
			require.False(t, end.Failed())
			require.NoError(t, end.Err)
			require.Equal(t, resultText(t, res), resultText(t, end.Result), "the after hook sees the answer the caller got")
			require.True(t, end.Result.IsError)
		})
	}
	t.Run("nothing refuses", func(t *testing.T) {
		t.Parallel()
		g := newGoverned(t, setup{caller: &toolcall.Caller{Subject: "ann", Roles: []string{"admin"}}, policies: map[string]string{"denials.rego": callDenials}})
		c := g.connectRaw(t, proto20250618)
		c.call(`{"name":"echo","arguments":{"text":"x"},"_meta":{"deny":false}}`)
		end := g.after.lastEnd(t)
		require.Equal(t, toolcall.OutcomeResult, end.Outcome)
		require.Empty(t, end.Reasons())
		require.Empty(t, end.AnsweredBy())
	})
}
