package mcpadapter_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/toolcall"
)

// The fuzzers drive the whole pipeline (wire layer, SDK decoding, docs/contract.md §5)
// through one governed server per fuzz worker, built before f.Fuzz, over a
// raw JSON-RPC client of each protocol revision. Seeds are in
// testdata/fuzz/<Name>/; `go test` runs them, `scripts/fuzz` fuzzes.

// fuzzCaller is the caller of the fuzz server: a manager sees every row but
// execUrl and resetCounter (section reports).
var fuzzCaller = &toolcall.Caller{Subject: "max", Roles: []string{"manager"}}

// fuzzHidden is a tool the fuzz caller may not see; fuzzAbsent names no row.
const (
	fuzzHidden = "execUrl"
	fuzzAbsent = "zzAbsentTool"
)

// fuzzPolicy adds a call rule that denies and one that answers, keyed on
// _meta, so that the fuzzer reaches both with a one-entry _meta.
const fuzzPolicy = `package toolgate.call

deny contains "Refused by policy." if input.request.meta["festi/deny"] == true

result := {"content": [{"type": "text", "text": "Answered by policy."}]} if input.request.meta["festi/answer"] == true
`

// metaHook denies or answers when _meta carries festi/hookDeny or
// festi/hookAnswer.
func metaHook() hooks.Hook {
	return hooks.Hook{Name: "meta", Before: func(_ context.Context, c *hooks.CallContext) (hooks.Verdict, error) {
		if _, ok := c.Meta.Get("festi/hookDeny"); ok {
			return hooks.Deny("Refused by hook."), nil
		}
		if _, ok := c.Meta.Get("festi/hookAnswer"); ok {
			return hooks.Answer(mcpadapter.TextResult("Answered by hook.", false)), nil
		}
		return hooks.Allow(), nil
	}}
}

// fuzzServer is one governed server with a raw client per protocol revision.
type fuzzServer struct {
	g       *governed
	clients map[string]*rawClient
	visible []string // what tools/list shows the fuzz caller
	afters  atomic.Int64
}

func newFuzzServer(f *testing.F) *fuzzServer {
	f.Helper()
	// demo.sleep may sleep for up to a minute; the fuzzer may not.
	reg := strings.Replace(string(toolgate.ExampleRegistry()), "maximum: 60000", "maximum: 20", 1)
	require.Contains(f, reg, "maximum: 20")
	// A generous evaluation deadline: on a loaded machine the harness's
	// 200 ms makes a grant time out now and then, and the answer (correctly
	// "could not be verified") would differ between the hidden and the
	// absent call of one input.
	g := newGoverned(f, setup{registry: reg, caller: fuzzCaller, policies: map[string]string{"fuzz.rego": fuzzPolicy},
		opts: []engine.Option{engine.WithTimeout(10 * time.Second)}})
	fs := &fuzzServer{g: g, clients: map[string]*rawClient{}}
	g.adapter.AddHook(metaHook())
	g.adapter.AddHook(hooks.Hook{Name: "count", After: func(context.Context, *hooks.CallContext, *hooks.Record) error {
		fs.afters.Add(1)
		return nil
	}})
	for _, p := range protocols {
		fs.clients[p] = g.connectRaw(f, p)
	}
	var list struct {
		Result mcp.ListToolsResult `json:"result"`
	}
	c := fs.clients[proto20250618]
	c.id++
	require.NoError(f, json.Unmarshal(c.roundTrip(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list","params":{}}`, c.id)), &list))
	for _, tl := range list.Result.Tools {
		fs.visible = append(fs.visible, tl.Name)
	}
	require.NotContains(f, fs.visible, fuzzHidden)
	require.Contains(f, fs.visible, "echo")
	return fs
}

// client returns the raw client for the revision proto selects, bound to t;
// a request that cannot be sent under 2026-07-28 (its _meta is not an
// object) goes under 2025-06-18.
func (fs *fuzzServer) client(t *testing.T, proto uint8, req string) (*rawClient, string) {
	c := fs.clients[protocols[int(proto)%len(protocols)]]
	c.t = t
	if _, ok := c.prepare(req); !ok {
		c = fs.clients[proto20250618]
		c.t = t
	}
	// The record hook of the harness keeps every end; the fuzzer counts.
	fs.g.after.mu.Lock()
	fs.g.after.ends = nil
	fs.g.after.mu.Unlock()
	return c, c.proto
}

var integerName = regexp.MustCompile(`^-?[0-9]+$`)

// callName is the name docs/contract.md §5 step 1 reads from raw params: a string, or
// an integer as its decimal text. ok is false when there is none.
func callName(params []byte) (string, bool) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(params, &obj) != nil {
		return "", false
	}
	raw := bytes.TrimSpace(obj["name"])
	var s string
	if json.Unmarshal(raw, &s) == nil && len(raw) > 0 && raw[0] == '"' {
		return s, true
	}
	if integerName.Match(raw) {
		return string(raw), true
	}
	return "", false
}

// metaKeys returns the keys of the _meta object sent (none when _meta is
// not an object). Bounding may drop an entry, so a key here is needed for
// a hook or rule to react to it, not enough.
func metaKeys(params []byte) map[string]bool {
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	_ = json.Unmarshal(params, &p)
	out := map[string]bool{}
	for k := range p.Meta {
		out[k] = true
	}
	return out
}

const (
	msgNameRequired = "Error: Tool name is required."
	msgNotVerified  = "Error: Tool access could not be verified."
)

// checkCall checks one tools/call answer against the reference reading of
// the contract (fuzz_oracle_test.go): a tool result, never a JSON-RPC error
// here; exactly the answer of the step that decides, computed from the
// params: no name (step 1); arguments no input can represent (step 3, the
// only way the fuzz policy fails); a name the caller does not see (step 4);
// a refusal or an answer only where _meta carries the key its hook or rule
// reads (step 5); the first wrong declared argument with its declared type
// (step 6); the demo method's own result (step 7). After hooks run once for
// a call that reached step 5 or failed at step 3, never otherwise.
func (fs *fuzzServer) checkCall(t *testing.T, params string, resp []byte, aftersBefore int64) {
	t.Helper()
	res := toolResult(t, resp)
	require.Len(t, res.Content, 1, "%s", resp)
	tc, ok := res.Content[0].(*mcp.TextContent)
	require.True(t, ok, "%s", resp)
	text := tc.Text
	name, named := callName([]byte(params))
	ran := fs.afters.Load() - aftersBefore
	args := readArgs([]byte(params))
	isError := func() { require.True(t, res.IsError, "an answer of docs/contract.md §5 without isError: %s", resp) }

	// Step 1.
	if !named {
		require.Equal(t, msgNameRequired, text, "params %s", params)
		isError()
		require.Zero(t, ran, "after hooks ran for a call without a name")
		return
	}
	// Step 3: the fuzz policy cannot fail; arguments it cannot be given
	// fail the decision, for every name alike.
	if args.object && !args.exact {
		require.Equal(t, msgNotVerified, text, "arguments no input can represent: params %s", params)
		isError()
		require.Equal(t, int64(1), ran, "after hooks see a step 3 refusal once")
		return
	}
	require.NotEqual(t, msgNotVerified, text, "the fuzz policy cannot fail, the arguments are representable: params %s", params)
	// Step 4.
	if !slices.Contains(fs.visible, name) {
		require.Equal(t, "Error: Unknown tool '"+name+"'.", text, "params %s", params)
		isError()
		require.Zero(t, ran, "after hooks ran for a refused name")
		return
	}
	require.Equal(t, int64(1), ran, "after hooks run exactly once for an accepted call")
	// Step 5: the fuzz hooks and rules react to _meta keys only.
	keys := metaKeys([]byte(params))
	switch text {
	case "Answered by hook.", "Answered by policy.":
		require.False(t, res.IsError)
		require.True(t, keys[map[string]string{"Answered by hook.": "festi/hookAnswer", "Answered by policy.": "festi/answer"}[text]], "params %s", params)
		return
	}
	if strings.HasPrefix(text, "Refused by ") {
		isError()
		reasons := strings.Split(text, "; ")
		require.LessOrEqual(t, len(reasons), 2, text)
		for i, r := range reasons {
			switch r {
			case "Refused by hook.":
				require.Zero(t, i, "the hook's reason comes first")
				require.True(t, keys["festi/hookDeny"], "params %s", params)
			case "Refused by policy.":
				require.True(t, keys["festi/deny"], "params %s", params)
			default:
				t.Fatalf("not a reason of the fuzz hooks or rules: %q", r)
			}
		}
		return
	}
	// Step 6.
	row := fs.g.eng.Current().Registry().Tools[fs.g.eng.Current().ToolIndex(name)]
	if want := argAnswer(&row, args); want != "" {
		require.Equal(t, want, text, "params %s", params)
		isError()
		return
	}
	// Step 7.
	switch want, fixed := methodResult(&row, args); {
	case row.Method == "demo.fail" || row.Method == "demo.inner":
		require.Equal(t, "Error: An internal error occurred while executing the tool.", text)
		isError()
	case row.Method == "demo.count":
		require.False(t, res.IsError, "params %s", params)
		n, err := strconv.ParseInt(text, 10, 64)
		require.NoError(t, err)
		require.Positive(t, n)
	default:
		require.True(t, fixed)
		require.False(t, res.IsError, "params %s → %s", params, resp)
		require.Equal(t, want, text, "the method's result: params %s", params)
	}
}

// maxMessageDepth is the nesting the SDK decodes a JSON-RPC message to.
const maxMessageDepth = 1000

// nesting is the deepest nesting of objects and arrays in b, valid JSON.
func nesting(b []byte) int {
	depth, deepest, in := 0, 0, false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case in && c == '\\':
			i++
		case c == '"':
			in = !in
		case in:
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}

// send sends one tools/call and checks its answer: a protocol fault of the
// SDK exactly where expectFaults allows one, else checkCall.
func (fs *fuzzServer) send(t *testing.T, proto uint8, params string) []byte {
	t.Helper()
	c, p := fs.client(t, proto, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":`+params+`}`)
	if req, _ := c.prepare(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + params + `}`); nesting([]byte(req)) > maxMessageDepth {
		// The SDK refuses the whole message before reading any of it (over
		// HTTP, a parse error; here the client cannot even send it): the
		// same for every name.
		_, err := jsonrpc.DecodeMessage([]byte(req))
		require.ErrorContains(t, err, "maximum nesting depth")
		return nil
	}
	before := fs.afters.Load()
	resp := c.call(params)
	checkFault(t, p, params, resp, func() { fs.checkCall(t, params, resp, before) })
	require.True(t, rpcError(resp) == "" || before == fs.afters.Load(), "a protocol fault reached the pipeline")
	return resp
}

// checkFault checks a response against the SDK's protocol rules for the
// reserved _meta keys: a JSON-RPC error only where expectFaults allows
// that exact error, and then nothing of toolgate's in it; otherwise ok runs.
func checkFault(t *testing.T, proto, params string, resp []byte, ok func()) {
	t.Helper()
	f := expectFaults(proto, []byte(params))
	if e := rpcError(resp); e != "" {
		require.True(t, f.allows(e), "a JSON-RPC error the protocol does not call for (%s): params %s → %s", proto, params, resp)
		require.NotRegexp(t, leaks, string(resp))
		return
	}
	require.True(t, f.noFault, "the SDK should have refused the reserved _meta keys (%s) with one of %v: params %s → %s", proto, f.allowed, params, resp)
	ok()
}

// rpcError returns the JSON-RPC error object of resp, "" when it has none.
func rpcError(resp []byte) string {
	var r struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(resp, &r) != nil || len(r.Error) == 0 || string(r.Error) == "null" {
		return ""
	}
	return string(r.Error)
}

// hiddenIsAbsent checks that the params with a hidden name and with an
// absent name get the same bytes apart from id and the echoed name.
func (fs *fuzzServer) hiddenIsAbsent(t *testing.T, proto uint8, withName func(name string) string) {
	t.Helper()
	hid := fs.send(t, proto, withName(fuzzHidden))
	abs := fs.send(t, proto, withName(fuzzAbsent))
	hid = bytes.Replace(normaliseID(hid), []byte("'"+fuzzHidden+"'"), []byte("'"+fuzzAbsent+"'"), 1)
	require.Equal(t, string(normaliseID(abs)), string(hid), "hidden and absent differ")
}

// jsonOrString is b when it is valid JSON, else b as a JSON string.
func jsonOrString(b []byte) string {
	if json.Valid(b) {
		return string(b)
	}
	s, _ := json.Marshal(string(b))
	return string(s)
}

// FuzzToolsCall assembles tools/call params from a raw name, arguments and
// _meta (each sent as is when it is valid JSON, else as a JSON string), and
// checks checkCall's invariants and hidden ≡ absent for the same arguments
// and _meta.
func FuzzToolsCall(f *testing.F) {
	f.Add(uint8(0), []byte(`"echo"`), []byte(`{"text":"hi"}`), []byte(`{}`))
	f.Add(uint8(1), []byte(`7`), []byte(`[]`), []byte(`null`))
	f.Add(uint8(2), []byte(`"getReward"`), []byte(`{"idReward":"x"}`), []byte(`{"festi/deny":true}`))
	fs := newFuzzServer(f)
	f.Fuzz(func(t *testing.T, proto uint8, name, args, meta []byte) {
		a, m := jsonOrString(args), jsonOrString(meta)
		withName := func(n string) string {
			return fmt.Sprintf(`{"name":%s,"arguments":%s,"_meta":%s}`, n, a, m)
		}
		fs.send(t, proto, withName(jsonOrString(name)))
		q := func(n string) string { b, _ := json.Marshal(n); return string(b) }
		fs.hiddenIsAbsent(t, proto, func(n string) string { return withName(q(n)) })
	})
}

// FuzzToolsCallParams sends raw tools/call params (any JSON value) and checks
// checkCall's invariants; for an object it also checks hidden ≡ absent with
// the name replaced.
func FuzzToolsCallParams(f *testing.F) {
	f.Add(uint8(0), []byte(`{"name":"echo","arguments":{"text":"hi"}}`))
	f.Add(uint8(1), []byte(`[]`))
	f.Add(uint8(2), []byte(`{"name":"add","arguments":{"a":1,"b":2},"_meta":{"k":1}}`))
	fs := newFuzzServer(f)
	f.Fuzz(func(t *testing.T, proto uint8, params []byte) {
		if !json.Valid(params) {
			return // not a JSON-RPC request at all
		}
		fs.send(t, proto, string(params))
		var obj map[string]json.RawMessage
		if json.Unmarshal(params, &obj) != nil || obj == nil {
			return
		}
		fs.hiddenIsAbsent(t, proto, func(n string) string {
			obj["name"], _ = json.Marshal(n)
			b, _ := json.Marshal(obj)
			return string(b)
		})
	})
}

// FuzzToolsList sends raw tools/list params and checks that the listing is
// the caller's, whatever the params: the example policies do not read _meta,
// so every answer lists the same tools, in registry order, private to the
// caller, and nothing leaks.
func FuzzToolsList(f *testing.F) {
	f.Add(uint8(0), []byte(`{}`))
	f.Add(uint8(1), []byte(`{"_meta":[1,2]}`))
	f.Add(uint8(2), []byte(`{"cursor":"x","_meta":{"festi/runId":"r"}}`))
	fs := newFuzzServer(f)
	f.Fuzz(func(t *testing.T, proto uint8, params []byte) {
		if !json.Valid(params) {
			return
		}
		req := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":` + string(params) + `}`
		c, _ := fs.client(t, proto, req)
		c.id++
		req = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list","params":%s}`, c.id, params)
		req, _ = c.prepare(req)
		if nesting([]byte(req)) > maxMessageDepth {
			return // refused before it is read, see send
		}
		resp := c.roundTrip(req)
		listed := false
		checkFault(t, c.proto, string(params), resp, func() { listed = true })
		if !listed {
			return
		}
		require.NotRegexp(t, leaks, string(resp))
		var r struct {
			Result *struct {
				Tools      []struct{ Name string } `json:"tools"`
				CacheScope string                  `json:"cacheScope"`
			} `json:"result"`
		}
		require.NoError(t, json.Unmarshal(resp, &r))
		require.NotNil(t, r.Result, "tools/list answered with an error: params %s → %s", params, resp)
		var names []string
		for _, tl := range r.Result.Tools {
			names = append(names, tl.Name)
		}
		require.Equal(t, fs.visible, names, "params %s", params)
	})
}
