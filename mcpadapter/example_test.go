package mcpadapter_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing/fstest"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/methods"
	"github.com/toolgate/toolgate/toolcall"
)

func Example() {
	ctx := context.Background()
	fsys := fstest.MapFS{
		"registry.yaml": {Data: []byte(`
sections:
  admin: { roles: [admin] }
tools:
  - name: echo
    method: demo.echo
    arguments: [{ name: text, type: string, required: true }]
  - name: wipe
    method: demo.echo
    section: admin
    arguments: [{ name: text, type: string, required: true }]
`)},
		"policies/call.rego": {Data: []byte("package toolgate.call\n")},
	}
	eng, err := engine.New(ctx, engine.Source{FS: fsys, Registry: "registry.yaml", Policies: "policies"})
	if err != nil {
		fmt.Println(err)
		return
	}
	tools := methods.Map{}
	tools.Register("demo.echo", func(_ context.Context, a struct {
		Text string `json:"text"`
	}) (string, error) {
		return a.Text, nil
	})
	alice := &toolcall.Caller{Subject: "alice", Roles: []string{"user"}}
	a := mcpadapter.New(mcpadapter.Options{Revisions: eng, Methods: tools, Caller: mcpadapter.StaticCaller(alice)})
	server := a.NewServer(&mcp.Implementation{Name: "example", Version: "1"}, nil)

	ct, st := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, mcpadapter.WrapTransport(st), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cs.Close()

	list, _ := cs.ListTools(ctx, nil)
	for _, t := range list.Tools {
		fmt.Println("listed:", t.Name)
	}
	for _, call := range []*mcp.CallToolParams{
		{Name: "echo", Arguments: map[string]any{"text": "hi"}},
		{Name: "echo", Arguments: map[string]any{}},
		{Name: "wipe", Arguments: map[string]any{"text": "all"}},
		{Name: "nothing"},
	} {
		res, _ := cs.CallTool(ctx, call)
		fmt.Printf("%s: %s (isError %t)\n", call.Name, res.Content[0].(*mcp.TextContent).Text, res.IsError)
	}
	// Output:
	// listed: echo
	// echo: hi (isError false)
	// echo: Error: Missing required argument 'text'. (isError true)
	// wipe: Error: Unknown tool 'wipe'. (isError true)
	// nothing: Error: Unknown tool 'nothing'. (isError true)
}

// DryRun decides a call by the steps a served call takes, without running
// a hook or the method: what `toolgate explain` prints. Each deny reason
// comes with the rule (file:line) that gave it.
func ExampleDryRun() {
	ctx := context.Background()
	fsys := fstest.MapFS{
		"registry.yaml": {Data: []byte(`
tools:
  - name: getReward
    method: demo.getReward
    arguments: [{ name: idReward, type: int, required: true }]
`)},
		"policies/call.rego": {Data: []byte(`package toolgate.call

deny contains "Rewards are closed today." if input.request.meta.closed == true
`)},
	}
	eng, err := engine.New(ctx, engine.Source{FS: fsys, Registry: "registry.yaml", Policies: "policies"})
	if err != nil {
		fmt.Println(err)
		return
	}
	tools := methods.Map{}
	tools.Register("demo.getReward", func(context.Context, struct {
		IDReward int `json:"idReward"`
	}) (string, error) {
		panic("a dry run runs no method")
	})
	alice := &toolcall.Caller{Subject: "alice"}
	for _, o := range []mcpadapter.DryRunOptions{
		{Name: "getReward", Arguments: json.RawMessage(`{"idReward": 7}`), Meta: json.RawMessage(`{"closed": true}`)},
		{Name: "getReward", Arguments: json.RawMessage(`{"idReward": "seven"}`)},
		{Name: "getReward", Arguments: json.RawMessage(`{"idReward": 7}`)},
	} {
		o.Revision, o.Caller, o.Methods = eng.Current(), alice, tools
		rec := mcpadapter.DryRun(ctx, o)
		fmt.Printf("%s: %q", rec.Stage, rec.Answer())
		for _, d := range rec.Denials {
			fmt.Printf(" (%s)", d.Rules[0])
		}
		fmt.Println()
	}
	// Output:
	// denied: "Rewards are closed today." (policies/call.rego:3)
	// arguments: "Error: Invalid value for argument 'idReward': expected int."
	// run: ""
}
