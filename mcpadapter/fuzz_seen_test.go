package mcpadapter_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/methods"
)

// seenRegistry has one row whose method records what it is given, with an
// argument of every JSON kind.
const seenRegistry = `
tools:
  - name: capture
    method: rec.capture
    arguments:
      - { name: url, type: string }
      - { name: o, type: object }
      - { name: a, type: array }
      - { name: f, type: float }
      - { name: b, type: bool }
`

// seenPolicy prints, from a call rule, the arguments the policy is given.
const seenPolicy = `package toolgate.call

deny contains "never" if {
	print(json.marshal(input.request.arguments))
	false
}
`

// printLog keeps the policy's print output.
type printLog struct {
	mu   sync.Mutex
	msgs []string
}

func (p *printLog) Enabled(context.Context, slog.Level) bool { return true }
func (p *printLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "policy print" {
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "msg" {
			p.mu.Lock()
			p.msgs = append(p.msgs, a.Value.String())
			p.mu.Unlock()
		}
		return true
	})
	return nil
}
func (p *printLog) WithAttrs([]slog.Attr) slog.Handler { return p }
func (p *printLog) WithGroup(string) slog.Handler      { return p }

func (p *printLog) take() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.msgs
	p.msgs = nil
	return out
}

// captured is what rec.capture was given, by argument name.
type captured struct {
	mu   sync.Mutex
	args map[string]json.RawMessage
	runs int
}

func (c *captured) take() (map[string]json.RawMessage, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a, n := c.args, c.runs
	c.args, c.runs = nil, 0
	return a, n
}

// FuzzArgumentsSeenAsSent is rule 1 (a policy sees exactly what runs) as a
// property: for any
// arguments, either the call is refused at step 3 ("could not be
// verified", exactly when the reference says no input can represent them,
// before any policy or method sees them), or the call rule saw exactly the
// arguments sent, and the method got, for each argument it ran with, a
// value that every conforming JSON reader reads as what the policy saw.
func FuzzArgumentsSeenAsSent(f *testing.F) {
	for _, s := range []string{
		`{"url":"http://169.254.169.254/latest/meta-data/","x":1e100000}`,
		`{"url":"http://169.254.169.254/","x":-1e99999999999}`,
		`{"url":"http://169.254.169.254/","x":[1e4567890]}`,
		`{"url":"http://169.254.169.254/","o":{"deep":[{"n":1e4567890}]}}`,
		`{"url":"https://example.com/","url":"http://169.254.169.254/"}`,
		`{"url":"http://169.254.169.254/","o":{"k":1,"k":2}}`,
		`{"url":"\ud800"}`,
		`{"url":"x","o":{"\udfff":1}}`,
		"{\"url\":\"\xff\"}",
		`{"url":"x","o":{"n":12345678901234567890.5e-3,"s":"\u00e9\ud83d\ude00"},"a":[1,true,null],"f":1.50,"b":false}`,
		`{"f":1e400}`,
		`[1e100000]`,
		`{}`,
	} {
		f.Add(uint8(0), []byte(s))
	}
	prints := &printLog{}
	rec := &captured{}
	methods := methods.Map{}
	methods.Register("rec.capture", func(_ context.Context, a struct {
		URL json.RawMessage `json:"url"`
		O   json.RawMessage `json:"o"`
		A   json.RawMessage `json:"a"`
		F   json.RawMessage `json:"f"`
		B   json.RawMessage `json:"b"`
	}) (string, error) {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		rec.runs++
		rec.args = map[string]json.RawMessage{}
		for k, v := range map[string]json.RawMessage{"url": a.URL, "o": a.O, "a": a.A, "f": a.F, "b": a.B} {
			if v != nil {
				rec.args[k] = bytes.Clone(v)
			}
		}
		return "ran", nil
	})
	g := newGoverned(f, setup{
		registry: seenRegistry,
		caller:   fuzzCaller,
		policies: map[string]string{"seen.rego": seenPolicy},
		methods:  methods,
		opts:     []engine.Option{engine.WithTimeout(10 * time.Second), engine.WithLogger(slog.New(prints))},
	})
	clients := map[string]*rawClient{}
	for _, p := range protocols {
		clients[p] = g.connectRaw(f, p)
	}
	f.Fuzz(func(t *testing.T, proto uint8, args []byte) {
		c := clients[protocols[int(proto)%len(protocols)]]
		c.t = t
		a := jsonOrString(args)
		params := fmt.Sprintf(`{"name":"capture","arguments":%s}`, a)
		if req, _ := c.prepare(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + params + `}`); nesting([]byte(req)) > maxMessageDepth {
			return // refused before it is read, see send
		}
		prints.take()
		rec.take()
		res := toolResult(t, c.call(params))
		text := resultText(t, res)
		seen := prints.take()
		got, runs := rec.take()
		ref := readArgsValue([]byte(a))

		if text == msgNotVerified {
			require.True(t, ref.object && !ref.exact, "refused at step 3, yet the reference represents the arguments exactly: %s", a)
			require.Empty(t, seen, "a policy was asked")
			require.Zero(t, runs, "the method ran")
			return
		}
		require.False(t, ref.object && !ref.exact, "arguments no input can represent were not refused at step 3: %s → %q", a, text)
		require.NotEmpty(t, seen, "the call rule did not run: %q", text)
		want := any(map[string]any{})
		if ref.object {
			want = ref.value
		}
		for _, s := range seen {
			require.True(t, reflect.DeepEqual(want, decodeNumbers(t, s)), "the policy saw %s, the arguments sent were %s", s, a)
		}
		if runs == 0 {
			return // an argument answer: the method did not run
		}
		require.Equal(t, "ran", text)
		policyView := decodeNumbers(t, seen[0]).(map[string]any)
		for k, raw := range got {
			v := readArgsValue([]byte(`{"v":` + string(raw) + `}`))
			require.True(t, v.exact, "the method got %s for %q, which readers may read differently", raw, k)
			require.True(t, reflect.DeepEqual(policyView[k], v.value.(map[string]any)["v"]), "argument %q: the policy saw %v, the method got %s", k, policyView[k], raw)
		}
	})
}

func decodeNumbers(t *testing.T, s string) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.UseNumber()
	var v any
	require.NoError(t, dec.Decode(&v), s)
	return v
}
