package mcpadapter_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/hooks/audit"
	"github.com/toolgate/toolgate/methods"
	"github.com/toolgate/toolgate/toolcall"
)

// The fault table: every fault is switched on by the _meta entry "fault" of
// one call, so that one server meets all of them in turn and must keep
// serving after each. Faults of upstream MCP servers are in
// upstream/faults_test.go, those of a ledger store in
// hooks/ledger/faults_test.go (the SQLite store would make this package's
// fuzzing binary slow to build).

const faultRows = `
  - name: probe
    method: test.probe
    description: Counts its runs.
  - name: boom
    method: test.panic
    description: Panics.
`

// faultGrant fails the grant decision four ways: a built-in error, a
// conflict, a loop that outlives its deadline, and a value of the wrong
// type.
const faultGrant = `package toolgate.grant

fault := input.request.meta.fault

granted := {x | x := to_number("not a number")} if fault == "grant-builtin-error"

granted := {"probe"} if fault == "grant-conflict"

granted := {"echo"} if fault == "grant-conflict"

granted := {x |
	xs := numbers.range(1, 3000)
	some a in xs
	some b in xs
	some c in xs
	a + b + c < 0
	x := "probe"
} if fault == "grant-loop"

granted := "probe" if fault == "grant-wrong-type"
`

// faultCall fails the toolgate.call rules the same ways.
const faultCall = `package toolgate.call

fault := input.request.meta.fault

deny contains msg if {
	fault == "call-builtin-error"
	msg := sprintf("%d", [to_number("not a number")])
}

deny contains "never" if {
	fault == "call-loop"
	xs := numbers.range(1, 3000)
	some a in xs
	some b in xs
	some c in xs
	a + b + c < 0
}

deny contains 5 if fault == "call-reason-not-a-string"

deny contains "" if fault == "call-empty-reason"

result := 5 if fault == "call-result-wrong-type"
`

// faultHooks are before and after hooks that misbehave when the call's
// _meta fault names them, and behave otherwise. A half runs under the
// hook deadline only for a call whose fault is its own (for which the
// outcome is the same whether its fault or the deadline comes first): for
// the other calls it is prompt, so that a loaded machine cannot make it
// miss the deadline.
func faultHooks(release <-chan struct{}) []hooks.Hook {
	fault := func(c *hooks.CallContext) string { s, _ := c.Meta.String("fault"); return s }
	before := func(_ context.Context, c *hooks.CallContext) (hooks.Verdict, error) {
		switch fault(c) {
		case "hook-panic":
			panic("before hook panicked at /srv/hooks.go:12")
		case "hook-error":
			return hooks.Verdict{}, errors.New("hook: open /etc/toolgate/secret: permission denied")
		case "hook-empty-reason":
			return hooks.Deny(""), nil
		case "hook-block":
			<-release // ignores its context on purpose
		}
		return hooks.Allow(), nil
	}
	after := func(_ context.Context, c *hooks.CallContext, _ *hooks.Record) error {
		switch fault(c) {
		case "after-panic":
			panic("after hook panicked")
		case "after-error":
			return errors.New("after hook failed")
		case "after-block":
			<-release
		}
		return nil
	}
	faulting := func(prefix string) func(*hooks.CallContext) bool {
		return func(c *hooks.CallContext) bool { return !strings.HasPrefix(fault(c), prefix) }
	}
	return []hooks.Hook{
		{Name: "faulty", Before: before, PromptFor: faulting("hook-")},
		{Name: "faulty-after", After: after, PromptFor: faulting("after-")},
	}
}

// faultWriter is an audit writer that fails or blocks on the records of
// calls whose fault names it, and keeps what it wrote. It closes wrote once
// it has written a record that contains mark.
type faultWriter struct {
	release <-chan struct{}
	mark    []byte
	wrote   chan struct{}
	mu      sync.Mutex
	buf     bytes.Buffer
}

func (w *faultWriter) Write(p []byte) (int, error) {
	switch {
	case bytes.Contains(p, []byte(`"fault":"audit-error"`)):
		return 0, errors.New("audit: disk full")
	case bytes.Contains(p, []byte(`"fault":"audit-block"`)):
		<-w.release
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if bytes.Contains(p, w.mark) && !bytes.Contains(w.buf.Bytes(), w.mark) {
		defer close(w.wrote)
	}
	return w.buf.Write(p)
}

func (w *faultWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// TestFaults injects one fault per call and checks the answer docs/contract.md §5 names,
// that the after hooks saw the call exactly once with the outcome that
// matches, whether the method ran, and that the next ordinary call is
// served.
func TestFaults(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var probes atomic.Int64
	methods := methods.Map{}
	methods.Register("test.probe", func(context.Context, struct{}) (string, error) {
		probes.Add(1)
		return "probe ran", nil
	})
	methods.Register("test.panic", func(context.Context, struct{}) (string, error) {
		panic(fmt.Sprintf("method panicked: %v", errors.New("/var/lib/x.db: main.go:7")))
	})
	const lastCall = "none, the last call"
	aw := &faultWriter{release: release, mark: []byte(`"fault":"` + lastCall + `"`), wrote: make(chan struct{})}
	aud := audit.New(aw, audit.Options{CloseTimeout: 100 * time.Millisecond})
	t.Cleanup(func() { _ = aud.Close() })
	unblock := sync.OnceFunc(func() { close(release) })
	t.Cleanup(unblock) // runs first: unblocks hooks and the writer

	g := newGoverned(t, setup{
		registry:   string(toolgate.ExampleRegistry()) + faultRows,
		policies:   map[string]string{"faults_grant.rego": faultGrant, "faults_call.rego": faultCall},
		caller:     fuzzCaller,
		extraHooks: append(faultHooks(release), aud.Hook()),
		methods:    methods,
		// The hooks that block do so until the test ends: they always
		// reach this deadline, which only makes the test quick.
		hookTimeout: 300 * time.Millisecond,
	})
	// The looping policies never end by themselves: their calls get a
	// deadline of their own (the request's context bounds the evaluation
	// like the engine's deadline does), while every other call keeps the
	// harness's generous evaluation deadline, so that a loaded machine
	// cannot make an ordinary call time out. The deadline covers the
	// call-loop call's grant decision too, which must finish before it:
	// seconds, not the milliseconds it takes.
	g.server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if r, ok := req.(*mcp.CallToolRequest); ok {
				if b, _ := json.Marshal(r.Params.Meta); bytes.Contains(b, []byte("-loop")) {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, 3*time.Second)
					defer cancel()
				}
			}
			return next(ctx, method, req)
		}
	})
	c := g.connectRaw(t, proto20250618)

	const (
		notVerified = "Error: Tool access could not be verified."
		internal    = "Error: An internal error occurred while executing the tool."
	)
	cases := []struct {
		fault   string
		tool    string
		want    string
		outcome toolcall.Outcome
		ran     bool // the method ran
	}{
		{fault: "grant-builtin-error", want: notVerified, outcome: toolcall.OutcomeRefusedGate},
		{fault: "grant-conflict", want: notVerified, outcome: toolcall.OutcomeRefusedGate},
		{fault: "grant-loop", want: notVerified, outcome: toolcall.OutcomeRefusedGate},
		{fault: "grant-wrong-type", want: notVerified, outcome: toolcall.OutcomeRefusedGate},
		{fault: "grant-loop", tool: "noSuchTool", want: notVerified, outcome: toolcall.OutcomeRefusedGate},
		{fault: "call-builtin-error", want: internal, outcome: toolcall.OutcomeFailed},
		{fault: "call-loop", want: internal, outcome: toolcall.OutcomeFailed},
		{fault: "call-reason-not-a-string", want: internal, outcome: toolcall.OutcomeFailed},
		{fault: "call-empty-reason", want: internal, outcome: toolcall.OutcomeFailed},
		{fault: "call-result-wrong-type", want: internal, outcome: toolcall.OutcomeFailed},
		{fault: "hook-panic", want: internal, outcome: toolcall.OutcomeFailed},
		{fault: "hook-error", want: internal, outcome: toolcall.OutcomeFailed},
		{fault: "hook-empty-reason", want: internal, outcome: toolcall.OutcomeFailed},
		{fault: "hook-block", want: internal, outcome: toolcall.OutcomeFailed},
		{fault: "method-panic", tool: "boom", want: internal, outcome: toolcall.OutcomeFailed},
		{fault: "after-panic", want: "probe ran", outcome: toolcall.OutcomeResult, ran: true},
		{fault: "after-error", want: "probe ran", outcome: toolcall.OutcomeResult, ran: true},
		{fault: "after-block", want: "probe ran", outcome: toolcall.OutcomeResult, ran: true},
		{fault: "audit-error", want: "probe ran", outcome: toolcall.OutcomeResult, ran: true},
		{fault: "audit-block", want: "probe ran", outcome: toolcall.OutcomeResult, ran: true},
	}
	// call sends one call and returns its text, the after hooks' outcomes and
	// how many times the probe ran.
	call := func(tool, meta string) (string, []string, int64) {
		g.after.mu.Lock()
		g.after.ends = nil
		g.after.mu.Unlock()
		before := probes.Load()
		resp := c.call(fmt.Sprintf(`{"name":%q,"arguments":{},"_meta":%s}`, tool, meta))
		require.NotRegexp(t, leaks, string(resp))
		return resultText(t, toolResult(t, resp)), g.after.outcomes(), probes.Load() - before
	}
	for _, tc := range cases {
		name := tc.fault
		if tc.tool != "" {
			name += "/" + tc.tool
		}
		t.Run(name, func(t *testing.T) {
			tool := tc.tool
			if tool == "" {
				tool = "probe"
			}
			meta := fmt.Sprintf(`{"fault":%q}`, tc.fault)
			// The call returns while release is still open: the hooks and
			// the writer that block on it, and the loops, were cut off by
			// their deadlines (the client's bound is only a failure bound).
			text, outcomes, ran := call(tool, meta)
			require.Equal(t, tc.want, text)
			require.Equal(t, []string{string(tc.outcome)}, outcomes, "the after hooks see the call exactly once")
			if tc.ran {
				require.Equal(t, int64(1), ran, "the method runs once")
			} else {
				require.Zero(t, ran, "the method never runs")
			}

			text, outcomes, ran = call("probe", `{}`)
			require.Equal(t, "probe ran", text, "the server keeps serving")
			require.Equal(t, []string{"result"}, outcomes)
			require.Equal(t, int64(1), ran)
		})
	}
	// The audit writer comes back after a failure and after blocking: once
	// unblocked, the records queued behind it are written.
	unblock()
	text, _, _ := call("probe", fmt.Sprintf(`{"fault":%q}`, lastCall))
	require.Equal(t, "probe ran", text)
	select {
	case <-aw.wrote:
	case <-time.After(time.Minute): // a failure bound only
		t.Fatal("no record written after a failed and a blocked write")
	}
	require.NotContains(t, aw.String(), `"fault":"audit-error"`)
}
