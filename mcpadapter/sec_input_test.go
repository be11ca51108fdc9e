package mcpadapter_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/methods"
	"github.com/toolgate/toolgate/toolcall"
)

// ssrfPolicy is what an operator writes to keep a URL driver off the cloud
// metadata endpoint.
const ssrfPolicy = `package toolgate.call

deny contains "The metadata endpoint is off limits." if startswith(input.request.arguments.url, "http://169.254.")
`

// recordingURL is a stand-in for demo.execUrl that records every URL it
// runs with.
type recordingURL struct {
	mu   sync.Mutex
	urls []string
}

func (r *recordingURL) methods() methods.Map {
	m := methods.Map{}
	m.Register("demo.execUrl", func(_ context.Context, a struct {
		URL string `json:"url"`
	}) (string, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.urls = append(r.urls, a.URL)
		return a.URL, nil
	})
	return m
}

func (r *recordingURL) ran() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.urls...)
}

// TestSSRFArgumentsThePolicyCannotSee is the unrepresentable-argument
// attack as an attacker sends it, through a go-sdk client: an undeclared argument holding a number
// beyond OPA's range used to make request.arguments {} for the call rule,
// which then let the metadata URL through to the method. Now the call is
// refused at step 3 ("could not be verified"), before hooks never run, the
// method never runs, and the after hooks see the step 3 failure. Hidden and
// absent names get the same bytes as the granted one.
func TestSSRFArgumentsThePolicyCannotSee(t *testing.T) {
	t.Parallel()
	for _, cache := range []bool{true, false} {
		t.Run(fmt.Sprintf("cache=%v", cache), func(t *testing.T) {
			t.Parallel()
			rec := &recordingURL{}
			var befores atomic.Int64
			g := newGoverned(t, setup{
				caller:   &toolcall.Caller{Subject: "mallory", Roles: []string{"admin"}},
				policies: map[string]string{"ssrf.rego": ssrfPolicy},
				methods:  rec.methods(),
				opts:     []engine.Option{engine.WithDecisionCache(cache)},
				extraHooks: []hooks.Hook{{Name: "count", Before: func(context.Context, *hooks.CallContext) (hooks.Verdict, error) {
					befores.Add(1)
					return hooks.Allow(), nil
				}}},
			})
			for _, proto := range protocols {
				cs := g.connectSDK(t, proto, nil)
				rec.mu.Lock()
				rec.urls = nil
				rec.mu.Unlock()
				call := func(args string) *mcp.CallToolResult {
					res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "execUrl", Arguments: json.RawMessage(args)})
					require.NoError(t, err, "a JSON-RPC error")
					return res
				}
				// The policy works on plain arguments.
				res := call(`{"url":"http://169.254.169.254/latest/meta-data/"}`)
				require.True(t, res.IsError)
				require.Equal(t, "The metadata endpoint is off limits.", resultText(t, res))
				res = call(`{"url":"https://example.com/"}`)
				require.False(t, res.IsError)
				require.Equal(t, []string{"https://example.com/"}, rec.ran())

				for name, args := range map[string]string{
					"the finding":      `{"url":"http://169.254.169.254/latest/meta-data/","x":1e100000}`,
					"negative":         `{"url":"http://169.254.169.254/","x":-1e99999999999}`,
					"nested":           `{"url":"http://169.254.169.254/","x":{"y":[1e4567890]}}`,
					"duplicate url":    `{"url":"https://example.com/","url":"http://169.254.169.254/"}`,
					"lone surrogate":   `{"url":"http://169.254.169.254/","x":"\ud800"}`,
					"exponent in url":  `{"url":[1e100000]}`,
					"escaped dup url":  `{"url":"http://169.254.169.254/","\u0075rl":"https://example.com/"}`,
					"surrogate in key": `{"url":"http://169.254.169.254/","\udfff":0}`,
				} {
					g.after.mu.Lock()
					g.after.ends = nil
					g.after.mu.Unlock()
					b0 := befores.Load()
					res := call(args)
					require.True(t, res.IsError, "%s (%s): %+v", name, proto, res)
					require.Equal(t, "Error: Tool access could not be verified.", resultText(t, res), "%s (%s)", name, proto)
					require.Equal(t, b0, befores.Load(), "%s: before hooks ran", name)
					require.Equal(t, []string{string(toolcall.OutcomeRefusedGate)}, g.after.outcomes(), name)
					require.Equal(t, []string{"https://example.com/"}, rec.ran(), "%s: the method ran", name)
				}
			}
			require.Contains(t, g.logs.String(), "input_error")
			require.NotContains(t, g.logs.String(), "169.254", "argument values are never logged")

			// Hidden ≡ absent ≡ granted for the same arguments, byte for byte.
			for _, proto := range protocols {
				c := g.connectRaw(t, proto)
				var first string
				for _, name := range []string{"execUrl", "noSuchTool", "42"} {
					resp := normaliseID(c.call(`{"name":"` + name + `","arguments":{"url":"http://169.254.169.254/","x":1e100000}}`))
					if first == "" {
						first = string(resp)
						require.Contains(t, first, "could not be verified")
						continue
					}
					require.Equal(t, first, string(resp), name)
				}
			}
		})
	}
}

// TestHiddenAndAbsentAgreeOnUnrepresentableArguments: for a caller who
// does not see the tool, the refusal is the same as for a name no row has
// (both step 3), for every unrepresentable argument.
func TestHiddenAndAbsentAgreeOnUnrepresentableArguments(t *testing.T) {
	t.Parallel()
	g := newGoverned(t, setup{caller: &toolcall.Caller{Subject: "max", Roles: []string{"manager"}}})
	for _, proto := range protocols {
		c := g.connectRaw(t, proto)
		for _, args := range []string{`{"x":1e100000}`, `{"a":1,"a":1}`, `{"a":"\udc00"}`, `{"a":[[-1e99999999999]]}`} {
			hid := normaliseID(c.call(`{"name":"execUrl","arguments":` + args + `}`))
			abs := normaliseID(c.call(`{"name":"zzAbsent","arguments":` + args + `}`))
			require.Equal(t, string(abs), string(hid), args)
			require.True(t, strings.Contains(string(hid), "could not be verified"), "%s", hid)
		}
	}
}

// TestCallResultIsExactlyACallToolResult: data.toolgate.call.result
// used to be decoded leniently into a CallToolResult, so a misspelt isError
// answered a success and an unknown content field an empty text. A result
// the answer would not carry as written is a failure of the call rules
// (the internal error), never another answer.
func TestCallResultIsExactlyACallToolResult(t *testing.T) {
	t.Parallel()
	for result, want := range map[string]string{
		`{"content": [{"type": "text", "text": "held"}], "isErr": true}`:                        msgInternal,
		`{"content": [{"type": "text", "text": "held"}], "IsError": true}`:                      msgInternal,
		`{"content": [{"type": "text", "txt": "held"}], "isError": true}`:                       msgInternal,
		`{"contents": [{"type": "text", "text": "held"}]}`:                                      msgInternal,
		`{"content": [{"type": "text", "text": "held", "extra": 1}]}`:                           msgInternal,
		`{"content": [{"type": "text", "text": "held"}], "isError": true}`:                      "held",
		`{"content": [{"type": "text", "text": "held"}], "isError": false}`:                     "held",
		`{"content": [{"type": "text", "text": "held"}], "structuredContent": {"a": [1, "b"]}}`: "held",
	} {
		g := newGoverned(t, setup{caller: fuzzCaller, policies: map[string]string{"answer.rego": "package toolgate.call\n\nresult := " + result + "\n"}})
		c := g.connectRaw(t, proto20250618)
		res := toolResult(t, c.call(`{"name":"echo","arguments":{"text":"ran"}}`))
		require.Equal(t, want, resultText(t, res), result)
		if want == msgInternal {
			require.True(t, res.IsError)
			require.Equal(t, []string{string(toolcall.OutcomeFailed)}, g.after.outcomes())
			require.Contains(t, g.logs.String(), "not a CallToolResult")
		}
	}
}

const msgInternal = "Error: An internal error occurred while executing the tool."

// TestCaseFoldedKeyIsNotAnotherValue: encoding/json matches object keys
// to struct fields case-insensitively, so for a method whose parameter is a
// struct, {"url": A, "URL": B} let the policy read A at
// input.request.arguments.target.url while the method got B. Such a value
// is now a value the argument cannot take.
func TestCaseFoldedKeyIsNotAnotherValue(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []string
	methods := methods.Map{}
	methods.Register("rec.fetch", func(_ context.Context, a struct {
		Target struct {
			URL string `json:"url"`
		} `json:"target"`
	}) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, a.Target.URL)
		return a.Target.URL, nil
	})
	g := newGoverned(t, setup{
		registry: "tools:\n  - name: fetch\n    method: rec.fetch\n    arguments:\n      - { name: target, type: object, required: true }\n",
		caller:   fuzzCaller,
		policies: map[string]string{"ssrf.rego": `package toolgate.call

deny contains "The metadata endpoint is off limits." if startswith(input.request.arguments.target.url, "http://169.254.")
`},
		methods: methods,
	})
	c := g.connectRaw(t, proto20250618)
	for args, want := range map[string]string{
		`{"target":{"url":"https://example.com/","URL":"http://169.254.169.254/"}}`: "Error: Invalid value for argument 'target': expected object.",
		`{"target":{"URL":"http://169.254.169.254/"}}`:                              "Error: Invalid value for argument 'target': expected object.",
		`{"target":{"url":"http://169.254.169.254/"}}`:                              "The metadata endpoint is off limits.",
		`{"target":{"url":"https://example.com/","other":1}}`:                       "https://example.com/",
	} {
		res := toolResult(t, c.call(`{"name":"fetch","arguments":`+args+`}`))
		require.Equal(t, want, resultText(t, res), args)
	}
	require.Equal(t, []string{"https://example.com/"}, got)
}

// TestProgressTokenIsTheOneThePolicySaw: a method gets the progress token
// the policy read in input.request.meta — the first of two sent, none of a
// case variant of _meta (which the SDK would decode into the same map),
// none that the bounds drop — never another.
func TestProgressTokenIsTheOneThePolicySaw(t *testing.T) {
	t.Parallel()
	ms := methods.Map{}
	ms.Register("rec.token", func(ctx context.Context, _ struct{}) (string, error) {
		return fmt.Sprint(mcpadapter.PeerOf(ctx).ProgressToken()), nil
	})
	g := newGoverned(t, setup{
		registry: "tools:\n  - name: token\n    method: rec.token\n",
		caller:   fuzzCaller,
		policies: map[string]string{"token.rego": `package toolgate.call

deny contains sprintf("the policy saw %v", [input.request.meta.progressToken]) if input.request.meta.progressToken != "seen"
`},
		methods: ms,
	})
	long := strings.Repeat("p", 5000)
	// The revisions whose requests the raw client sends as written (it
	// re-encodes 2026-07-28's to add the protocol entries, which would
	// fold the duplicates).
	for _, proto := range []string{proto20250618, proto20251125} {
		c := g.connectRaw(t, proto)
		for params, want := range map[string]string{
			`{"name":"token","_meta":{"progressToken":"seen"}}`:                                "seen",
			`{"name":"token","_meta":{"progressToken":"seen","progressToken":"other"}}`:        "seen",
			`{"name":"token","_meta":{"progressToken":"seen"},"_META":{"progressToken":7}}`:    "seen",
			`{"name":"token","_meta":{"progressToken":"seen","progressToken":"` + long + `"}}`: "seen",
			`{"name":"token","_meta":{"progressToken":"other","progressToken":"seen"}}`:        "the policy saw other",
			`{"name":"token","_Meta":{"progressToken":"seen"}}`:                                "",
			`{"name":"token","_meta":{"progressToken":"` + long + `","progressToken":"seen"}}`: "",
		} {
			text := resultText(t, toolResult(t, c.call(params)))
			if want == "" {
				// The policy saw no token (the rule's body is undefined):
				// neither does the method.
				assert.Equal(t, "<nil>", text, "%s %.80s", proto, params)
				continue
			}
			assert.Equal(t, want, text, "%s %.80s", proto, params)
		}
	}
}
