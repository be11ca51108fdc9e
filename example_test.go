package toolgate_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/example/demo"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/toolcall"
)

// Serve the bundled example governed for a contractor, over an in-memory
// transport: the contractor sees only the read-only tools, and a tool it
// does not see answers exactly like one that does not exist. Serve wraps
// every transport in the wire layer; Handler serves streamable HTTP.
func Example() {
	ctx := context.Background()
	srv, err := toolgate.New(ctx, toolgate.Options{
		// Registry: "registry.yaml", Policies: "rego", // "": the bundled example
		Methods: demo.Methods(),
		Caller:  mcpadapter.StaticCaller(&toolcall.Caller{Subject: "cid", Roles: []string{"contractor"}}),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	serverEnd, clientEnd := mcp.NewInMemoryTransports()
	go func() { _ = srv.Serve(ctx, serverEnd) }()
	client := mcp.NewClient(&mcp.Implementation{Name: "example"}, nil)
	cs, err := client.Connect(ctx, clientEnd, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()

	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	var names []string
	for _, t := range list.Tools {
		names = append(names, t.Name)
	}
	fmt.Println(strings.Join(names, " "))
	for _, name := range []string{"add", "resetCounter"} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{"a": 2, "b": 3}})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(name+":", res.Content[0].(*mcp.TextContent).Text)
	}
	// Output:
	// echo add fail inner sleep
	// add: 5
	// resetCounter: Error: Unknown tool 'resetCounter'.
}
