package mcpadapter_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/hooks/ledger"
	"github.com/toolgate/toolgate/internal/testkit/testclock"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/methods"
	"github.com/toolgate/toolgate/store"
	"github.com/toolgate/toolgate/toolcall"
)

// echoLimit limits echo to two calls a minute per subject.
const echoLimit = `package toolgate.call

limit contains {"key": sprintf("echo/%s", [input.caller.subject]), "max": 2, "per": "1m", "reason": "two echoes a minute"} if {
	input.tool.name == "echo"
}
`

var maxCaller = &toolcall.Caller{Subject: "max", Roles: []string{"manager"}}

// TestLimitedAnswerIsExact (docs/contract.md §18): past its limit a call answers
// `Rate limit exceeded: <reason>. Try again in <N> s.` (isError, byte for
// byte), N the whole seconds (rounded up) until it would be admitted; the
// method does not run, the audit outcome is limited; once the window slid
// (the clock moved, no sleep) the call runs again.
func TestLimitedAnswerIsExact(t *testing.T) {
	t.Parallel()
	clock := testclock.New(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	g := newGoverned(t, setup{
		caller:   maxCaller,
		policies: map[string]string{"limits.rego": echoLimit},
		limits:   ledger.NewLimiter(store.NewMemoryStore(), clock.Now),
	})
	c := g.connectRaw(t, proto20250618)
	echo := `{"name":"echo","arguments":{"text":"hi"}}`
	assert.Equal(t, `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}`, string(c.call(echo)))
	clock.Advance(500 * time.Millisecond)
	assert.Equal(t, `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"hi"}]}}`, string(c.call(echo)))
	clock.Advance(29 * time.Second)
	// The first call leaves the window at +60 s: 30.5 s from now, 31 whole seconds.
	assert.Equal(t, `{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"Rate limit exceeded: two echoes a minute. Try again in 31 s."}],"isError":true}}`,
		string(c.call(echo)))
	clock.Advance(30 * time.Second)
	assert.Equal(t, `{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"Rate limit exceeded: two echoes a minute. Try again in 1 s."}],"isError":true}}`,
		string(c.call(echo)), "half a second is a whole one")
	clock.Advance(500 * time.Millisecond)
	assert.Equal(t, `{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"hi"}]}}`, string(c.call(echo)), "the window slid")
	// Other tools are not limited.
	assert.Equal(t, `{"jsonrpc":"2.0","id":6,"result":{"content":[{"type":"text","text":"3"}]}}`, string(c.call(`{"name":"add","arguments":{"a":1,"b":2}}`)))

	assert.Equal(t, []string{"result", "result", "limited", "limited", "result", "result"}, g.after.outcomes())
	g.after.mu.Lock()
	end := g.after.ends[2]
	g.after.mu.Unlock()
	assert.Equal(t, toolcall.StageLimited, end.Stage)
	assert.Equal(t, []string{"Rate limit exceeded: two echoes a minute. Try again in 31 s."}, end.Reasons())
	assert.Equal(t, toolcall.ByLimit, end.Answerer.Kind)
	require.Len(t, end.Limits, 1)
	assert.Equal(t, int64(2), end.Limits[0].Count)
	assert.Equal(t, "echo/max", end.Limits[0].Limit.Key)
	assert.NotEmpty(t, end.Answerer.Rules, "the rule that defined the limit")
}

// TestLimitsUnderConcurrentCalls: 50 concurrent calls against max 10 admit
// exactly 10 through the adapter; the others are limited.
func TestLimitsUnderConcurrentCalls(t *testing.T) {
	t.Parallel()
	// A generous deadline for the store: 50 calls at once on a loaded
	// machine must not turn into hook time-outs.
	g := newGoverned(t, setup{
		caller: maxCaller,
		policies: map[string]string{"limits.rego": `package toolgate.call

limit contains {"key": "echo", "max": 10, "per": "1h", "reason": "ten an hour"} if input.tool.name == "echo"
`},
		hookTimeout: time.Minute,
		limits:      ledger.NewLimiter(store.NewMemoryStore(), testclock.New(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)).Now),
	})
	var ran, limited atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := g.connectRaw(t, proto20250618)
			<-start
			res := toolResult(t, c.call(fmt.Sprintf(`{"name":"echo","arguments":{"text":"%d"}}`, i)))
			switch {
			case !res.IsError:
				ran.Add(1)
			case resultText(t, res) == "Rate limit exceeded: ten an hour. Try again in 3600 s.":
				limited.Add(1)
			default:
				t.Errorf("unexpected answer %q", resultText(t, res))
			}
		}()
	}
	close(start)
	wg.Wait()
	assert.Equal(t, int64(10), ran.Load())
	assert.Equal(t, int64(40), limited.Load())
}

// TestLimitsOrderInStep5 (docs/contract.md §18): refusing wins over a limit (a
// denied call is not counted), a limit wins over an approval (no request
// is opened) and over an answer.
func TestLimitsOrderInStep5(t *testing.T) {
	t.Parallel()
	const oneAMinute = `package toolgate.call

limit contains {"key": input.tool.name, "max": 1, "per": "1m", "reason": "one a minute"}
`
	t.Run("deny wins and is not counted", func(t *testing.T) {
		t.Parallel()
		g := newGoverned(t, setup{caller: maxCaller, policies: map[string]string{"limits.rego": oneAMinute,
			"deny.rego": "package toolgate.call\n\ndeny contains \"no shouting\" if input.request.arguments.text == \"HI\"\n"}})
		c := g.connectRaw(t, proto20250618)
		for range 2 {
			assert.Equal(t, "no shouting", resultText(t, toolResult(t, c.call(`{"name":"echo","arguments":{"text":"HI"}}`))))
		}
		assert.Equal(t, "hi", resultText(t, toolResult(t, c.call(`{"name":"echo","arguments":{"text":"hi"}}`))), "the denied calls were not counted")
		assert.Equal(t, "Rate limit exceeded: one a minute. Try again in 60 s.", resultText(t, toolResult(t, c.call(`{"name":"echo","arguments":{"text":"hi"}}`))))
	})
	t.Run("a limit wins over an approval and an answer", func(t *testing.T) {
		t.Parallel()
		admin := &toolcall.Caller{Subject: "ada", Roles: []string{"admin"}}
		g := newGoverned(t, setup{caller: admin, policies: map[string]string{"limits.rego": oneAMinute,
			"answer.rego": "package toolgate.call\n\nresult := {\"content\": [{\"type\": \"text\", \"text\": \"answered\"}]} if input.tool.name == \"echo\"\n"}})
		c := g.connectRaw(t, proto20250618)
		assert.Equal(t, "answered", resultText(t, toolResult(t, c.call(`{"name":"echo","arguments":{"text":"x"}}`))))
		assert.Contains(t, resultText(t, toolResult(t, c.call(`{"name":"echo","arguments":{"text":"x"}}`))), "Rate limit exceeded: one a minute.")
		held := resultText(t, toolResult(t, c.call(`{"name":"resetCounter","arguments":{"key":"k"}}`)))
		assert.Contains(t, held, "Approval required:")
		assert.Equal(t, "Rate limit exceeded: one a minute. Try again in 60 s.",
			resultText(t, toolResult(t, c.call(`{"name":"resetCounter","arguments":{"key":"k"}}`))), "limited, not held again")
	})
}

// failingLimits is a limit store that cannot answer.
type failingLimits struct{}

func (failingLimits) Admit(context.Context, []engine.Limit) (hooks.LimitCheck, error) {
	return hooks.LimitCheck{}, errors.New("connection refused")
}

func (failingLimits) Peek(context.Context, []engine.Limit) (hooks.LimitCheck, error) {
	return hooks.LimitCheck{}, errors.New("connection refused")
}

// TestLimitsFailClosed: a malformed limit object is a failure of the call
// rules, and a store that cannot answer fails the call: the internal-error
// answer, the method not run.
func TestLimitsFailClosed(t *testing.T) {
	t.Parallel()
	malformed := map[string]string{
		"max zero":             `{"key": "k", "max": 0, "per": "1m", "reason": "r"}`,
		"max fraction":         `{"key": "k", "max": 1.5, "per": "1m", "reason": "r"}`,
		"max a string":         `{"key": "k", "max": "10", "per": "1m", "reason": "r"}`,
		"per not a time":       `{"key": "k", "max": 1, "per": "a minute", "reason": "r"}`,
		"per negative":         `{"key": "k", "max": 1, "per": "-1m", "reason": "r"}`,
		"empty key":            `{"key": "", "max": 1, "per": "1m", "reason": "r"}`,
		"no reason":            `{"key": "k", "max": 1, "per": "1m"}`,
		"unknown member":       `{"key": "k", "max": 1, "per": "1m", "reason": "r", "burst": 2}`,
		"not an object":        `"k"`,
		"cost zero":            `{"key": "k", "max": 10, "per": "1m", "reason": "r", "cost": 0}`,
		"cost negative":        `{"key": "k", "max": 10, "per": "1m", "reason": "r", "cost": -1}`,
		"cost a string":        `{"key": "k", "max": 10, "per": "1m", "reason": "r", "cost": "5"}`,
		"max zero with a cost": `{"key": "k", "max": 0, "per": "1m", "reason": "r", "cost": 1}`,
		"two costs under one key": `{"key": "k", "max": 10, "per": "1m", "reason": "r", "cost": 1}
limit contains {"key": "k", "max": 10, "per": "1h", "reason": "r", "cost": 2}`,
	}
	for name, obj := range malformed {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g := newGoverned(t, setup{caller: maxCaller, policies: map[string]string{"limits.rego": "package toolgate.call\n\nlimit contains " + obj + "\n"}})
			c := g.connectRaw(t, proto20250618)
			assert.Equal(t, `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"Error: An internal error occurred while executing the tool."}],"isError":true}}`,
				string(c.call(`{"name":"echo","arguments":{"text":"hi"}}`)))
			end := g.after.lastEnd(t)
			assert.Equal(t, toolcall.StageRuleFailed, end.Stage)
			assert.Contains(t, end.Err.Error(), "data.toolgate.call.limit")
		})
	}
	t.Run("a limit that is not a set", func(t *testing.T) {
		t.Parallel()
		g := newGoverned(t, setup{caller: maxCaller, policies: map[string]string{"limits.rego": `package toolgate.call

limit := {"key": "k", "max": 1, "per": "1m", "reason": "r"}
`}})
		c := g.connectRaw(t, proto20250618)
		assert.Equal(t, mcpadapter.AnswerInternal, resultText(t, toolResult(t, c.call(`{"name":"echo","arguments":{"text":"hi"}}`))))
	})
	t.Run("a store that cannot answer", func(t *testing.T) {
		t.Parallel()
		g := newGoverned(t, setup{caller: maxCaller, policies: map[string]string{"limits.rego": echoLimit}, limits: failingLimits{}})
		c := g.connectRaw(t, proto20250618)
		assert.Equal(t, mcpadapter.AnswerInternal, resultText(t, toolResult(t, c.call(`{"name":"echo","arguments":{"text":"hi"}}`))))
		end := g.after.lastEnd(t)
		assert.Equal(t, toolcall.OutcomeFailed, end.Outcome)
		assert.Contains(t, end.Err.Error(), "connection refused")
		assert.NotContains(t, g.logs.String(), `text":"hi`)
	})
	t.Run("no store", func(t *testing.T) {
		t.Parallel()
		eng, err := engine.New(context.Background(), writeExample(t, t.TempDir(), setup{policies: map[string]string{"limits.rego": echoLimit}}), engine.WithTimeout(time.Minute))
		require.NoError(t, err)
		a := mcpadapter.New(mcpadapter.Options{Revisions: eng, Methods: methods.Map{}, Caller: mcpadapter.StaticCaller(maxCaller)})
		res := a.Call(context.Background(), callRequest(`{"name":"echo","arguments":{"text":"hi"}}`))
		assert.Equal(t, mcpadapter.AnswerInternal, hooks.ResultText(res))
	})
}

// callRequest is a served tools/call request with the given params (name
// and arguments), for calling Adapter.Call directly.
func callRequest(params string) *mcp.CallToolRequest {
	var p mcp.CallToolParamsRaw
	if err := json.Unmarshal([]byte(params), &p); err != nil {
		panic(err)
	}
	return &mcp.CallToolRequest{Params: &p}
}

// TestBudgetAnswers (docs/contract.md §20): a limit with a cost admits
// calls while their costs add up to max, refuses the one past it with the
// seconds until enough cost has left the window, and answers a cost above
// max with the reason alone.
func TestBudgetAnswers(t *testing.T) {
	t.Parallel()
	clock := testclock.New(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	g := newGoverned(t, setup{
		caller: maxCaller,
		policies: map[string]string{"limits.rego": `package toolgate.call

limit contains {"key": sprintf("add/%s", [input.caller.subject]), "max": 10, "per": "1m", "cost": input.request.arguments.a, "reason": "adds of more than 10 a minute"} if {
	input.tool.name == "add"
}
`},
		limits: ledger.NewLimiter(store.NewMemoryStore(), clock.Now),
	})
	c := g.connectRaw(t, proto20250618)
	add := func(a int) string { return fmt.Sprintf(`{"name":"add","arguments":{"a":%d,"b":0}}`, a) }
	assert.Equal(t, `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"4"}]}}`, string(c.call(add(4))))
	clock.Advance(10 * time.Second)
	assert.Equal(t, `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"6"}]}}`, string(c.call(add(6))), "exactly at the sum")
	clock.Advance(10 * time.Second)
	assert.Equal(t, `{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"Rate limit exceeded: adds of more than 10 a minute. Try again in 40 s."}],"isError":true}}`,
		string(c.call(add(3))), "4 leaves the window at +60 s")
	assert.Equal(t, `{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"Rate limit exceeded: adds of more than 10 a minute. Try again in 50 s."}],"isError":true}}`,
		string(c.call(add(7))), "4 and 6 must both leave")
	assert.Equal(t, `{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"Rate limit exceeded: adds of more than 10 a minute."}],"isError":true}}`,
		string(c.call(add(11))), "a cost above max")
	clock.Advance(40 * time.Second)
	assert.Equal(t, `{"jsonrpc":"2.0","id":6,"result":{"content":[{"type":"text","text":"3"}]}}`, string(c.call(add(3))))
	assert.Equal(t, []string{"result", "result", "limited", "limited", "limited", "result"}, g.after.outcomes())
}
