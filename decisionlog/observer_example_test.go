package decisionlog_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/decisionlog"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/example/demo"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/toolcall"
)

// The adapter's decisions reach the log through its observer: a listing,
// a call that ran, and a call refused as an unknown tool are four events.
func ExampleLogger_Observer() {
	ctx := context.Background()
	eng, _ := engine.New(ctx, toolgate.Source("", "")) // the bundled example
	sink := &memSink{}
	l := decisionlog.New(sink, decisionlog.Options{})
	a := mcpadapter.New(mcpadapter.Options{Revisions: eng, Methods: demo.Methods(),
		Caller: mcpadapter.StaticCaller(&toolcall.Caller{Subject: "max", Roles: []string{"manager"}})})
	a.AddObserver(l.Observer())
	ct, st := mcp.NewInMemoryTransports()
	ss, _ := a.NewServer(&mcp.Implementation{Name: "toolgate"}, nil).Connect(ctx, mcpadapter.WrapTransport(st), nil)
	cs, _ := mcp.NewClient(&mcp.Implementation{Name: "client"}, nil).Connect(ctx, ct, nil)
	_, _ = cs.ListTools(ctx, nil)
	_, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: "add", Arguments: map[string]any{"a": 1, "b": 2}})
	_, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: "execUrl", Arguments: map[string]any{"url": "http://x"}})
	_ = cs.Close()
	_ = ss.Wait()
	_ = l.Close(ctx)
	for _, raw := range sink.events {
		var e struct {
			Path   string `json:"path"`
			Input  struct{ Request struct{ Method, Tool string } }
			Result map[string]any `json:"result"`
		}
		_ = json.Unmarshal(raw, &e)
		fmt.Println(e.Path, e.Input.Request.Method, e.Input.Request.Tool, e.Result["granted"], e.Result["outcome"])
	}
	// Output:
	// toolgate/grant/granted tools/list  <nil> no_override
	// toolgate/grant/granted tools/call add true no_override
	// toolgate/call tools/call add <nil> result
	// toolgate/grant/granted tools/call execUrl false no_override
}
