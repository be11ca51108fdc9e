package upstream

import (
	"context"
	"encoding/json"
	"testing"
	"testing/fstest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/methods"
	"github.com/toolgate/toolgate/toolcall"
)

// The governed call end to end: rows dispatching to upstream tools through
// the adapter, as docs/contract.md §5 answers them.
func TestThroughAdapter(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	// gone's time-out is far past the test's failure bound: a down
	// upstream must answer without waiting it out.
	p := newPool(t, memoryConfig("up"), Config{Name: "gone", Command: []string{"/nonexistent/upstream"}, Timeout: time.Hour})
	a := aliceAdapter(t, 10*time.Second, p, `
tools:
  - name: greet
    method: upstream:up/hello
    arguments: [{name: name, type: string, required: true}]
  - name: oops
    method: upstream:up/fail
  - name: misnamed
    method: upstream:up/hello
    arguments: [{name: nom, type: string}]
  - name: down
    method: upstream:gone/hello
    arguments: [{name: name, type: string, required: true}]
`)
	callTool := func(name, args string) *mcp.CallToolResult {
		return a.Call(ctx, &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: name, Arguments: json.RawMessage(args)}})
	}

	res := callTool("greet", `{"name":"ann","extra":1}`)
	assert.False(t, res.IsError)
	assert.Equal(t, "hello, ann", textOf(t, res))

	res = callTool("greet", `{"name":7}`)
	assert.True(t, res.IsError)
	assert.Equal(t, "Error: Invalid value for argument 'name': expected string.", textOf(t, res))

	res = callTool("oops", `{}`)
	assert.True(t, res.IsError)
	assert.Equal(t, "upstream failed", textOf(t, res), "an upstream isError result passes through")

	res = callTool("misnamed", `{}`)
	assert.Equal(t, "Error: Unknown argument 'nom'.", textOf(t, res), "the upstream's listing is known by now")

	bounded, cancel := context.WithTimeout(ctx, failureBound)
	defer cancel()
	res = a.Call(bounded, &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "down", Arguments: json.RawMessage(`{"name":"x"}`)}})
	assert.True(t, res.IsError)
	assert.Equal(t, "Error: An internal error occurred while executing the tool.", textOf(t, res))
	require.NoError(t, bounded.Err(), "a down upstream answers at once, not at a time-out")
}

// aliceAdapter governs alice's calls under the registry (YAML) and a grant
// policy that adds nothing to its rows, each decision bounded by timeout,
// the rows' methods served by p.
func aliceAdapter(t *testing.T, timeout time.Duration, p *Pool, registry string) *mcpadapter.Adapter {
	t.Helper()
	src := engine.Source{FS: fstest.MapFS{
		"registry.yaml":     {Data: []byte(registry)},
		"policy/grant.rego": {Data: []byte("package toolgate.grant\n")},
	}, Registry: "registry.yaml", Policies: "policy"}
	eng, err := engine.New(t.Context(), src, engine.WithTimeout(timeout))
	require.NoError(t, err)
	return mcpadapter.New(mcpadapter.Options{
		Revisions: eng,
		Methods:   Chain(methods.Map{}, p),
		Caller:    mcpadapter.StaticCaller(&toolcall.Caller{Subject: "alice"}),
	})
}
