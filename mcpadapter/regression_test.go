package mcpadapter_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRegression_UndecodableParamsField: a tools/call or tools/list whose
// params carry a field the SDK's params type cannot decode (requestState a
// number, inputResponses an array, a case variant of name holding a number,
// cursor a number) was answered with a JSON-RPC -32602 error quoting the
// params, the wire layer's internal _meta entry and Go type names. Found by
// FuzzToolsCallParams. A tools/call now gets its docs/contract.md §5 answer, a
// tools/list its listing, and hidden is still absent.
func TestRegression_UndecodableParamsField(t *testing.T) {
	t.Parallel()
	calls := []struct{ params, want string }{
		{`{"name":"echo","requestState":5,"arguments":{"text":"x"}}`, "x"},
		{`{"name":"echo","inputResponses":[1],"arguments":{"text":"x"}}`, "x"},
		{`{"name":"echo","NAME":5,"arguments":{"text":"x"}}`, "x"},
		{`{"name":"echo","Arguments":5,"arguments":{"text":"x"}}`, "x"},
		{`{"name":"execUrl","requestState":{},"arguments":{"url":"u"}}`, "Error: Unknown tool 'execUrl'."},
		{`{"name":"nope","requestState":{},"arguments":{"url":"u"}}`, "Error: Unknown tool 'nope'."},
		{`{"NAME":"echo","_META":1,"requestState":true}`, "Error: Tool name is required."},
	}
	for _, proto := range protocols {
		g := newGoverned(t, setup{caller: fuzzCaller})
		c := g.connectRaw(t, proto)
		for _, tc := range calls {
			resp := c.call(tc.params)
			require.NotRegexp(t, leaks, string(resp), "%s (%s)", tc.params, proto)
			if proto == proto20260728 && strings.Contains(tc.params, `"inputResponses":[`) {
				// This revision defines inputResponses: not an object,
				// it is invalid params (docs/contract.md §19).
				var r struct {
					Error *struct {
						Code int64 `json:"code"`
					} `json:"error"`
				}
				require.NoError(t, json.Unmarshal(resp, &r))
				require.NotNil(t, r.Error, "%s (%s): %s", tc.params, proto, resp)
				require.Equal(t, int64(-32602), r.Error.Code)
				continue
			}
			require.Equal(t, tc.want, resultText(t, toolResult(t, resp)), "%s (%s)", tc.params, proto)
		}
		for _, params := range []string{`{"cursor":5}`, `{"Cursor":[],"_meta":{}}`} {
			c.id++
			req, ok := c.prepare(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list","params":%s}`, c.id, params))
			require.True(t, ok)
			resp := c.roundTrip(req)
			require.NotRegexp(t, leaks, string(resp), "%s (%s)", params, proto)
			var r struct {
				Result *struct {
					Tools []json.RawMessage `json:"tools"`
				} `json:"result"`
			}
			require.NoError(t, json.Unmarshal(resp, &r))
			require.NotNil(t, r.Result, "tools/list %s (%s): %s", params, proto, resp)
			require.NotEmpty(t, r.Result.Tools)
		}
	}
}

// TestRegression_HugeExponentArgument: a number whose exponent the JSON
// Schema validator cannot represent (big.Rat refuses 1e4567890) made it
// panic inside the SDK's handler goroutine, which does not recover: one
// tools/call ended the whole server. Found by FuzzToolsCall in CI. Such a
// number cannot be represented in the input document either, so the call
// is now refused at step 3 (docs/contract.md §3), before binding.
func TestRegression_HugeExponentArgument(t *testing.T) {
	t.Parallel()
	cases := []struct{ args, named string }{
		{`{"a":1e4567890,"b":1}`, "a"},
		{`{"a":1,"b":-1E999999999999}`, "b"},
	}
	for _, proto := range protocols {
		g := newGoverned(t, setup{caller: fuzzCaller})
		c := g.connectRaw(t, proto)
		for _, tc := range cases {
			res := toolResult(t, c.call(`{"name":"add","arguments":`+tc.args+`}`))
			require.Equal(t, "Error: Tool access could not be verified.", resultText(t, res), tc.args)
		}
		// The server is still serving.
		res := toolResult(t, c.call(`{"name":"add","arguments":{"a":2,"b":3}}`))
		require.Equal(t, "5", resultText(t, res))
	}
}
