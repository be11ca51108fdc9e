package methods_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/methods"
	"github.com/toolgate/toolgate/toolcall"
)

// A Go function becomes a method: its parameter's fields are the
// arguments, its result the tool's text.
func ExampleMap_Register() {
	tools := methods.Map{}
	tools.Register("demo.greet", func(_ context.Context, a struct {
		Name string `json:"name"`
	}) (string, error) {
		return "hello, " + a.Name, nil
	})
	m, _ := tools.Method("demo.greet")
	inv, err := m.Bind([]toolcall.Arg{{Name: "name", Value: json.RawMessage(`"ada"`)}})
	if err != nil {
		panic(err)
	}
	res, err := inv(context.Background())
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output: hello, ada
}
