package audit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/internal/canon"
	"github.com/toolgate/toolgate/internal/testkit/proctest"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/methods"
	"github.com/toolgate/toolgate/toolcall"
)

// specFields are the fields of an audit record, docs/contract.md §10; addedFields
// those the record adds (how the call was decided), always present.
var (
	specFields = []string{"decision_id", "timestamp", "subject", "tool", "method", "outcome",
		"reason", "error", "duration_ms", "revision", "meta", "arguments_sha256"}
	addedFields = []string{"stage", "grant"}
)

// The values that must never reach the trail.
const (
	secretArg   = "s3cr3t-argument-v4lue"
	secretToken = "tok-s3cr3t-bearer"
)

const testRegistry = `
sections:
  vault: { roles: [] }
tools:
  - name: echo
    method: demo.echo
    arguments: [{ name: text, type: string, required: true }]
  - name: fail
    method: demo.fail
    arguments: [{ name: text, type: string }]
  - name: hidden
    method: demo.echo
    section: vault
    arguments: [{ name: text, type: string }]
`

const testGrant = `package toolgate.grant

# Two definitions of a complete rule: a conflict, so the decision fails.
granted := {"echo"} if input.caller.subject == "gatebreaker"

granted := {"fail"} if input.caller.subject == "gatebreaker"
`

const testCall = `package toolgate.call

deny contains "Rule says no." if input.request.meta["test/deny"] == true

result := {"content": [{"type": "text", "text": "from policy"}]} if input.request.meta["test/answer"] == true
`

// newAdapter returns an adapter over a small registry and policy with the
// given hooks and a caller taken from the context.
func newAdapter(t *testing.T, hks ...hooks.Hook) *mcpadapter.Adapter {
	t.Helper()
	fsys := fstest.MapFS{
		"registry.yaml":       {Data: []byte(testRegistry)},
		"policies/grant.rego": {Data: []byte(testGrant)},
		"policies/call.rego":  {Data: []byte(testCall)},
	}
	e, err := engine.New(context.Background(), engine.Source{FS: fsys, Registry: "registry.yaml", Policies: "policies"}, engine.WithTimeout(10*time.Second))
	require.NoError(t, err)
	methods := methods.Map{}
	methods.Register("demo.echo", func(_ context.Context, a struct {
		Text string `json:"text"`
	}) (string, error) {
		return "echo", nil // not the argument: the trail must not get it from the result either
	})
	methods.Register("demo.fail", func(context.Context, struct {
		Text string `json:"text"`
	}) (string, error) {
		return "", errors.New("open /srv/demo/fail.db: permission denied")
	})
	a := mcpadapter.New(mcpadapter.Options{
		Revisions: e,
		Methods:   methods,
		Caller: func(ctx context.Context, _ mcp.Request) (*toolcall.Caller, string) {
			c, _ := ctx.Value(callerKey{}).(*toolcall.Caller)
			return c, hooks.SourceLocal
		},
	})
	for _, h := range hks {
		a.AddHook(h)
	}
	return a
}

type callerKey struct{}

func callAs(a *mcpadapter.Adapter, subject, tool string, meta mcp.Meta) *mcp.CallToolResult {
	ctx := context.Background()
	if subject != "" {
		ctx = context.WithValue(ctx, callerKey{}, &toolcall.Caller{
			Subject: subject, Roles: []string{"user"}, Claims: map[string]any{"token": secretToken},
		})
	}
	args, _ := json.Marshal(map[string]any{"text": secretArg})
	return a.Call(ctx, &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: tool, Arguments: args, Meta: meta}})
}

// denyHook refuses calls whose _meta asks for it; answerHook answers them.
var (
	denyHook = hooks.Hook{Name: "deny", Before: func(_ context.Context, c *hooks.CallContext) (hooks.Verdict, error) {
		if v, ok := c.Meta.Get("test/deny"); ok && string(v) == "true" {
			return hooks.Deny("Hook says no."), nil
		}
		return hooks.Allow(), nil
	}}
	answerHook = hooks.Hook{Name: "answer", Before: func(_ context.Context, c *hooks.CallContext) (hooks.Verdict, error) {
		if _, ok := c.Meta.Get("test/hook-answer"); ok {
			return hooks.Answer(mcpadapter.TextResult("from hook", false)), nil
		}
		return hooks.Allow(), nil
	}}
)

// TestAuditRecords: each kind of call yields exactly the record docs/contract.md §10
// says, or none for calls that never reached step 5 nor failed at step 3.
func TestAuditRecords(t *testing.T) {
	t.Parallel()
	wantHash := canon.SHA256([]byte(`{"text":"` + secretArg + `"}`))
	cases := []struct {
		name, subject, tool string
		meta                mcp.Meta
		want                map[string]any // fields checked exactly; nil: no record
		wantError           string         // substring of "error"
	}{
		{name: "result", subject: "alice", tool: "echo", meta: mcp.Meta{"festi/runId": "r-1"},
			want: map[string]any{"subject": "alice", "tool": "echo", "method": "demo.echo", "outcome": "result",
				"reason": "", "error": "", "meta": map[string]any{"festi/runId": "r-1"}, "stage": "run", "grant": "no_override", "rules": nil, "denials": nil}},
		{name: "answered by a rule", subject: "alice", tool: "echo", meta: mcp.Meta{"test/answer": true},
			want: map[string]any{"tool": "echo", "method": "demo.echo", "outcome": "answered", "reason": "", "error": "",
				"meta": map[string]any{"test/answer": true}, "stage": "answered", "rules": []any{"policies/call.rego:5"}}},
		{name: "answered by a hook", subject: "alice", tool: "echo", meta: mcp.Meta{"test/hook-answer": 1},
			want: map[string]any{"outcome": "answered", "reason": "", "error": "", "rules": nil}},
		{name: "denied by hook and rule", subject: "alice", tool: "echo", meta: mcp.Meta{"test/deny": true},
			want: map[string]any{"outcome": "denied", "reason": "Hook says no.; Rule says no.", "error": "", "stage": "denied",
				"rules": []any{"policies/call.rego:3"}, "denials": []any{
					map[string]any{"reason": "Hook says no.", "hook": "deny"},
					map[string]any{"reason": "Rule says no.", "rules": []any{"policies/call.rego:3"}},
				}}},
		{name: "failed", subject: "alice", tool: "fail",
			want:      map[string]any{"tool": "fail", "method": "demo.fail", "outcome": "failed", "reason": ""},
			wantError: "permission denied"},
		{name: "refused at the gate", subject: "gatebreaker", tool: "no-such-tool",
			want: map[string]any{"subject": "gatebreaker", "tool": "no-such-tool", "method": "", "outcome": "refused_gate", "reason": "",
				"stage": "not_verified", "grant": "failed"},
			wantError: "conflict"},
		{name: "hidden", subject: "alice", tool: "hidden"},
		{name: "absent", subject: "alice", tool: "no-such-tool"},
		{name: "name missing", subject: "alice", tool: ""},
		{name: "nobody", subject: "", tool: "echo"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var buf proctest.Buffer
			aud := New(&buf, Options{})
			var seen atomic.Pointer[hooks.Record]
			capture := hooks.Hook{Name: "capture", After: func(_ context.Context, _ *hooks.CallContext, end *hooks.Record) error {
				seen.Store(end)
				return nil
			}}
			a := newAdapter(t, denyHook, answerHook, capture, aud.Hook())
			before := time.Now()
			callAs(a, c.subject, c.tool, c.meta)
			require.NoError(t, aud.Close())
			out := buf.String()
			require.NotContains(t, out, secretArg)
			require.NotContains(t, out, secretToken)
			if c.want == nil {
				require.Empty(t, out)
				return
			}
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			require.Len(t, lines, 1, out)
			var rec map[string]any
			d := json.NewDecoder(strings.NewReader(lines[0]))
			d.UseNumber()
			require.NoError(t, d.Decode(&rec))
			keys := make([]string, 0, len(rec))
			for k := range rec {
				if k != "rules" && k != "denials" { // present when a rule or hook decided
					keys = append(keys, k)
				}
			}
			require.ElementsMatch(t, append(slices.Clip(specFields), addedFields...), keys)
			for k, v := range c.want {
				require.Equal(t, v, rec[k], k)
			}
			require.Contains(t, rec["error"], c.wantError)
			require.Len(t, rec["decision_id"], 32)
			require.Equal(t, wantHash, rec["arguments_sha256"])
			require.Regexp(t, `^[0-9]+/[0-9a-f]{12}$`, rec["revision"])
			ts, err := time.Parse(time.RFC3339Nano, rec["timestamp"].(string))
			require.NoError(t, err)
			require.True(t, strings.HasSuffix(rec["timestamp"].(string), "Z"), "UTC")
			require.WithinDuration(t, before, ts, time.Minute)
			ms, err := rec["duration_ms"].(json.Number).Float64()
			require.NoError(t, err)
			require.Positive(t, ms, "a call that reached the hooks took time")
			require.Equal(t, seen.Load().DurationMS(), ms, "the duration the adapter measured")
			if c.meta == nil {
				require.Equal(t, map[string]any{}, rec["meta"])
			}
		})
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// blockingWriter blocks every Write until release closes; entered gets a
// value as each Write begins.
type blockingWriter struct{ release, entered chan struct{} }

func (w blockingWriter) Write(p []byte) (int, error) {
	select {
	case w.entered <- struct{}{}:
	default:
	}
	<-w.release
	return len(p), nil
}

// TestAuditWriterTrouble: a writer that fails or blocks forever breaks and
// delays no call; its records are dropped and counted.
func TestAuditWriterTrouble(t *testing.T) {
	t.Parallel()
	const calls = 40
	for _, tc := range []struct {
		name string
		w    func(t *testing.T) writerCase
	}{
		{"failing", func(t *testing.T) writerCase { return writerCase{w: failingWriter{}, wantDropped: calls} }},
		{"blocking", func(t *testing.T) writerCase {
			release, entered := make(chan struct{}), make(chan struct{}, 1)
			t.Cleanup(func() { close(release) })
			// One record is stuck in Write, Buffer wait in the channel; the
			// rest are dropped at once, and the buffered ones at Close.
			return writerCase{w: blockingWriter{release, entered}, entered: entered, wantDropped: calls - 1, closeErr: true}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			wc := tc.w(t)
			var hooked counter
			// Close's deadline is reached only by the writer that blocks
			// until the test ends; the failing writer gets a minute (a
			// failure bound) to fail its records on a loaded machine.
			closeTimeout := time.Minute
			if wc.closeErr {
				closeTimeout = 50 * time.Millisecond
			}
			aud := New(wc.w, Options{Buffer: 4, CloseTimeout: closeTimeout, OnDrop: hooked.inc})
			a := newAdapter(t, aud.Hook())
			for i := range calls {
				res := callAs(a, "alice", "echo", nil)
				require.False(t, res.IsError)
				require.Equal(t, "echo", res.Content[0].(*mcp.TextContent).Text)
				if i == 0 && wc.entered != nil {
					<-wc.entered // the first record is stuck in Write
				}
			}
			// The calls were not held up: with the blocking writer, every
			// call above returned while its first record was stuck in Write.
			err := aud.Close()
			if wc.closeErr {
				require.ErrorContains(t, err, "did not finish")
			} else {
				require.NoError(t, err)
			}
			require.EqualValues(t, wc.wantDropped, aud.Dropped())
			require.EqualValues(t, wc.wantDropped, hooked.get())
			// After Close, records are dropped, never sent on a closed channel.
			callAs(a, "alice", "echo", nil)
			require.EqualValues(t, wc.wantDropped+1, aud.Dropped())
			require.Equal(t, err, aud.Close(), "Close is idempotent")
		})
	}
}

// TestAuditDropsAreLogged: the first dropped record is logged at once,
// with why and the writer's error (later drops are rate-limited).
func TestAuditDropsAreLogged(t *testing.T) {
	t.Parallel()
	var logs proctest.Buffer
	aud := New(failingWriter{}, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	a := newAdapter(t, aud.Hook())
	callAs(a, "alice", "echo", nil)
	require.NoError(t, aud.Close())
	require.EqualValues(t, 1, aud.Dropped())
	out := logs.String()
	require.Contains(t, out, "audit: records dropped")
	require.Contains(t, out, `why="write failed"`)
	require.Contains(t, out, "dropped_total=1")
	require.Contains(t, out, "error=\"disk full\"")
}

// TestAuditDropLogIsOncePerSecond: drops are logged at most once a second,
// counted on the auditor's clock: a drop a second or more after the last
// logged one is logged again, with the total so far.
func TestAuditDropLogIsOncePerSecond(t *testing.T) {
	t.Parallel()
	var logs proctest.Buffer
	aud := New(io.Discard, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	defer aud.Close()
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	for _, at := range []time.Duration{0, 999 * time.Millisecond, time.Second, time.Second + time.Millisecond, 3 * time.Second} {
		aud.now = func() time.Time { return t0.Add(at) }
		aud.drop(1, "buffer full", nil)
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	require.Len(t, lines, 3, "at 0, 1 s and 3 s:\n%s", logs.String())
	for i, total := range []string{"dropped_total=1", "dropped_total=3", "dropped_total=5"} {
		require.Contains(t, lines[i], "audit: records dropped")
		require.Contains(t, lines[i], total)
	}
	require.EqualValues(t, 5, aud.Dropped())
}

type writerCase struct {
	w           interface{ Write([]byte) (int, error) }
	entered     chan struct{}
	wantDropped int
	closeErr    bool
}

type counter struct {
	mu sync.Mutex
	n  int
}

func (c *counter) inc() { c.mu.Lock(); c.n++; c.mu.Unlock() }
func (c *counter) get() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// TestAuditConcurrentCalls: every record of concurrent calls is one whole
// line.
func TestAuditConcurrentCalls(t *testing.T) {
	t.Parallel()
	var buf proctest.Buffer
	aud := New(&buf, Options{Buffer: 256})
	a := newAdapter(t, aud.Hook())
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() { callAs(a, "alice", "echo", mcp.Meta{"festi/runId": "r"}) })
	}
	wg.Wait()
	require.NoError(t, aud.Close())
	require.Zero(t, aud.Dropped())
	sc := bufio.NewScanner(strings.NewReader(buf.String()))
	var ids []string
	for sc.Scan() {
		var r Record
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r))
		ids = append(ids, r.DecisionID)
	}
	require.Len(t, ids, 50)
	slices.Sort(ids)
	require.Len(t, slices.Compact(ids), 50)
}

// TestAuditSaysAnOverrideDecided: a call the policy's granted set let
// through is "grant": "override"; one the base decision let through is
// "no_override": the audit line says whether an override decided.
func TestAuditSaysAnOverrideDecided(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		"registry.yaml":       {Data: []byte(testRegistry)},
		"policies/grant.rego": {Data: []byte("package toolgate.grant\n\ngranted := {\"echo\"} if input.caller.subject == \"carol\"\n")},
	}
	e, err := engine.New(context.Background(), engine.Source{FS: fsys, Registry: "registry.yaml", Policies: "policies"})
	require.NoError(t, err)
	methods := methods.Map{}
	methods.Register("demo.echo", func(context.Context, struct {
		Text string `json:"text"`
	}) (string, error) {
		return "echo", nil
	})
	for subject, want := range map[string]string{"carol": "override", "alice": "no_override"} {
		var buf proctest.Buffer
		aud := New(&buf, Options{})
		a := mcpadapter.New(mcpadapter.Options{Revisions: e, Methods: methods, Caller: mcpadapter.StaticCaller(&toolcall.Caller{Subject: subject})})
		a.AddHook(aud.Hook())
		res := a.Call(context.Background(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "echo", Arguments: json.RawMessage(`{"text":"x"}`)}})
		require.False(t, res.IsError)
		require.NoError(t, aud.Close())
		var r Record
		require.NoError(t, json.Unmarshal([]byte(buf.String()), &r))
		require.Equal(t, want, r.Grant, subject)
		require.Equal(t, "result", r.Outcome)
	}
}

// TestHookIsPrompt: the audit hook never waits (the record goes to a
// bounded buffer), so it asks to run without the hook deadline's
// goroutine and timer.
func TestHookIsPrompt(t *testing.T) {
	t.Parallel()
	a := New(&bytes.Buffer{}, Options{})
	defer a.Close()
	require.True(t, a.Hook().Prompt)
}

// TestRecordNamesEachRevision: a record names the revision its call read,
// also when calls of two revisions alternate (the name is formatted once
// per revision, not once for all).
func TestRecordNamesEachRevision(t *testing.T) {
	t.Parallel()
	revision := func(grant string) *engine.Revision {
		fsys := fstest.MapFS{"registry.yaml": {Data: []byte(testRegistry)}, "policies/grant.rego": {Data: []byte(grant)}}
		e, err := engine.New(context.Background(), engine.Source{FS: fsys, Registry: "registry.yaml", Policies: "policies"})
		require.NoError(t, err)
		return e.Current()
	}
	a := revision("package toolgate.grant\n")
	b := revision("package toolgate.grant\n\ngranted := {\"echo\"}\n")
	require.NotEqual(t, a.String(), b.String())
	end := &hooks.Record{}
	for _, rev := range []*engine.Revision{a, b, a, a, b} {
		r := NewRecord(&hooks.CallContext{Revision: rev, Arguments: json.RawMessage(`{}`)}, end)
		require.Equal(t, rev.String(), r.Revision)
	}
}
