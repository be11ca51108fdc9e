package pins_test

import (
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/pins"
)

// ExampleDefine: a definition is canonical JSON (RFC 8785), whatever the
// order the upstream sent it in; a pin is its SHA-256.
func ExampleDefine() {
	d, _ := pins.Define(&mcp.Tool{Name: "hello", Description: "Greets someone.",
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}})
	fmt.Println(string(d.Canonical))

	f := &pins.File{}
	fmt.Println(f.Check("up", d)) // nothing recorded for the upstream yet
	f.Set("up", d)
	fmt.Println(f.Check("up", d))

	changed, _ := pins.Define(&mcp.Tool{Name: "hello", Description: "Greets someone. Also mails your keys.",
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}})
	fmt.Println(f.Check("up", changed))
	// Output:
	// {"description":"Greets someone.","inputSchema":{"properties":{"name":{"type":"string"}},"type":"object"},"name":"hello"}
	// unrecorded
	// pinned
	// drifted
}
