package mcpadapter_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/mcpadapter"
)

// The fuzzers drive the whole pipeline (wire layer, SDK decoding, SPEC §5)
// through one governed server per fuzz worker, built before f.Fuzz, over a
// raw JSON-RPC client of each protocol revision. Seeds are in
// testdata/fuzz/<Name>/; `go test` runs them, `scripts/fuzz` fuzzes.

// fuzzCaller is the caller of the fuzz server: a manager sees every row but
// execUrl and resetCounter (section reports).
var fuzzCaller = &engine.Caller{Subject: "max", Roles: []string{"manager"}}

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
func metaHook() mcpadapter.Hook {
	return mcpadapter.Hook{Name: "meta", Before: func(_ context.Context, c *mcpadapter.CallContext) (mcpadapter.Verdict, error) {
		if _, ok := c.Meta.Get("festi/hookDeny"); ok {
			return mcpadapter.Deny("Refused by hook."), nil
		}
		if _, ok := c.Meta.Get("festi/hookAnswer"); ok {
			return mcpadapter.Answer(mcpadapter.TextResult("Answered by hook.", false)), nil
		}
		return mcpadapter.Allow(), nil
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
	g.adapter.AddHook(mcpadapter.Hook{Name: "count", After: func(context.Context, *mcpadapter.CallContext, *mcpadapter.CallEnd) error {
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

// The exact answers of SPEC §5, and the reasons the fuzz server's hooks and
// rules give.
var (
	answerUnknownTool = regexp.MustCompile(`(?s)^Error: Unknown tool '(.*)'\.$`)
	pipelineAnswers   = regexp.MustCompile(`^(?:` + strings.Join([]string{
		`Error: Tool name is required\.`,
		`Error: Tool access could not be verified\.`,
		`Error: An internal error occurred while executing the tool\.`,
		`Error: Missing required argument '[A-Za-z0-9_]+'\.`,
		`Error: Invalid value for argument '[A-Za-z0-9_]+'(?:: expected (?:int|float|string|bool|array|object))?\.`,
		`Error: Unknown argument '[A-Za-z0-9_]+'\.`,
		`(?:Refused by hook\.|Refused by policy\.)(?:; (?:Refused by hook\.|Refused by policy\.))*`,
	}, "|") + `)$`)
)

var integerName = regexp.MustCompile(`^-?[0-9]+$`)

// callName is the name SPEC §5 step 1 reads from raw params: a string, or
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

// checkCall checks the invariants of one tools/call answer: a tool result,
// never a JSON-RPC error; a non-error result only for a tool the caller
// sees; an error result one of SPEC §5's exact answers; nothing leaked; the
// after hooks ran once for a call that reached step 5, never otherwise.
func (fs *fuzzServer) checkCall(t *testing.T, params string, resp []byte, aftersBefore int64) {
	t.Helper()
	res := toolResult(t, resp)
	require.Len(t, res.Content, 1, "%s", resp)
	tc, ok := res.Content[0].(*mcp.TextContent)
	require.True(t, ok, "%s", resp)
	name, named := callName([]byte(params))
	visible := named && slices.Contains(fs.visible, name)
	ran := fs.afters.Load() - aftersBefore
	if !res.IsError {
		require.True(t, visible, "a result for a tool the caller does not see: params %s → %s", params, resp)
		require.Equal(t, int64(1), ran, "after hooks of a call that ran")
		return
	}
	text := tc.Text
	if m := answerUnknownTool.FindStringSubmatch(text); m != nil {
		require.True(t, named, "Unknown tool for params without a name: %s", params)
		require.Equal(t, name, m[1], "the name echoed is the name sent")
		require.False(t, visible, "a tool the caller sees answered as unknown: %s", params)
		require.Zero(t, ran, "after hooks ran for a refused name")
		return
	}
	require.Regexp(t, pipelineAnswers, text, "not an answer of SPEC §5: params %s", params)
	require.NotRegexp(t, leaks, text)
	switch text {
	case "Error: Tool name is required.":
		require.Zero(t, ran, "after hooks ran for a call without a name")
		return
	case "Error: Tool access could not be verified.":
		// Step 3 comes before step 4: any name, hidden or absent too.
		require.True(t, named)
		require.Equal(t, int64(1), ran, "after hooks see a step 3 refusal once")
		return
	}
	require.True(t, visible, "an answer past step 4 for a tool the caller does not see: %s → %s", params, text)
	require.Equal(t, int64(1), ran, "after hooks run exactly once")
}

// send sends one tools/call and checks its answer.
func (fs *fuzzServer) send(t *testing.T, proto uint8, params string) []byte {
	t.Helper()
	c, _ := fs.client(t, proto, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":`+params+`}`)
	before := fs.afters.Load()
	resp := c.call(params)
	if protocolFault(t, params, resp) {
		require.Equal(t, before, fs.afters.Load(), "a protocol fault reached the pipeline")
		return resp
	}
	fs.checkCall(t, params, resp, before)
	return resp
}

// protocolFault reports whether resp is the SDK's JSON-RPC error for
// reserved _meta keys (io.modelcontextprotocol/...) that do not make a valid
// 2026-07-28 request, such as a protocolVersion without clientCapabilities:
// a protocol fault the SDK answers before any middleware, the same for every
// name (so hidden ≡ absent still holds), quoting nothing of toolgate's.
func protocolFault(t *testing.T, params string, resp []byte) bool {
	t.Helper()
	var r struct {
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(resp, &r) != nil || r.Error == nil {
		return false
	}
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	_ = json.Unmarshal([]byte(params), &p)
	reserved := false
	for k := range p.Meta {
		reserved = reserved || strings.HasPrefix(k, "io.modelcontextprotocol/")
	}
	if !reserved || r.Error.Code != -32602 || !strings.HasPrefix(r.Error.Message, "missing or invalid _meta field") {
		return false
	}
	require.NotRegexp(t, leaks, string(resp))
	return true
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
		resp := c.roundTrip(req)
		if protocolFault(t, string(params), resp) {
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
