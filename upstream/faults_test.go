package upstream

import (
	"context"
	"encoding/json"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/toolcall"
)

// TestUpstreamFaults is the upstream part of the fault table (the rest is
// mcpadapter/faults_test.go): an upstream tool that hangs past the call
// time-out, one whose process exits inside the call, and one whose process
// is killed while a call is in flight. Each ends in docs/contract.md §5's internal
// error, the after hooks see it once, and the next call is served (by a new
// process where the old one died).
func TestUpstreamFaults(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	// The time-out is what ends the hanging call; every other call here
	// answers in milliseconds, so it is generous for them on a loaded
	// machine too.
	cfg := stdioConfig("up")
	cfg.Timeout = 3 * time.Second
	slow := newSlowWatch(t)
	p, err := NewPool([]Config{cfg}, &Options{TerminateGrace: 500 * time.Millisecond, Stderr: slow})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	require.NoError(t, p.Connect(ctx))

	var (
		mu   sync.Mutex
		ends []hooks.Record
	)
	a := aliceAdapter(t, time.Minute, p, `
tools:
  - name: greet
    method: upstream:up/hello
    arguments: [{name: name, type: string, required: true}]
  - name: slow
    method: upstream:up/slow
    arguments: [{name: ms, type: int, required: true}]
  - name: crash
    method: upstream:up/crash
`)
	a.AddHook(hooks.Hook{Name: "record", After: func(_ context.Context, _ *hooks.CallContext, e *hooks.Record) error {
		mu.Lock()
		defer mu.Unlock()
		ends = append(ends, *e)
		return nil
	}})
	callTool := func(name, args string) (string, []toolcall.Outcome, []error) {
		mu.Lock()
		ends = nil
		mu.Unlock()
		res := a.Call(ctx, &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: name, Arguments: json.RawMessage(args)}})
		mu.Lock()
		defer mu.Unlock()
		var outcomes []toolcall.Outcome
		var errs []error
		for _, e := range ends {
			outcomes = append(outcomes, e.Outcome)
			errs = append(errs, e.Err)
		}
		return textOf(t, res), outcomes, errs
	}
	const internal = "Error: An internal error occurred while executing the tool."

	cases := []struct {
		name    string
		tool    string
		args    string
		during  func() // runs while the call is in flight
		timeout bool   // the call ends by the upstream's time-out
	}{
		{name: "hangs past the time-out", tool: "slow", args: `{"ms":60000}`, timeout: true},
		{name: "exits inside the call", tool: "crash", args: `{}`},
		{name: "killed mid-call", tool: "slow", args: `{"ms":60001}`, during: func() {
			if !slow.wait(60001) { // the call is in flight
				return
			}
			if pid := p.pid("up"); pid != 0 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			text, outcomes, _ := callTool("greet", `{"name":"before"}`)
			require.Equal(t, "hello, before", text)
			require.Equal(t, []toolcall.Outcome{toolcall.OutcomeResult}, outcomes)

			if tc.during != nil {
				go tc.during()
			}
			text, outcomes, errs := callTool(tc.tool, tc.args)
			require.Equal(t, internal, text)
			require.Equal(t, []toolcall.Outcome{toolcall.OutcomeFailed}, outcomes, "the after hooks see the failure once")
			// What ended the call is in its error, not in how long it took:
			// a dead process is noticed at once, not at the time-out.
			if tc.timeout {
				require.ErrorIs(t, errs[0], ErrTimeout)
			} else {
				require.NotErrorIs(t, errs[0], ErrTimeout, "a dead upstream fails at once, not at the time-out")
			}

			text, outcomes, _ = callTool("greet", `{"name":"after"}`)
			require.Equal(t, "hello, after", text, "the next call is served")
			require.Equal(t, []toolcall.Outcome{toolcall.OutcomeResult}, outcomes)
		})
	}
}
