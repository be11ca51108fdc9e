package pins_test

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/pins"
)

// BenchmarkDefine: the cost of checking one tool against its pin on each
// revision build (Define; the comparison itself is a string compare).
func BenchmarkDefine(b *testing.B) {
	var schema any
	_ = json.Unmarshal([]byte(`{"type":"object","properties":{"count":{"type":"integer","minimum":1,"maximum":10,"description":"how many"},
		"label":{"type":"string","pattern":"^[a-z]+$"},"tags":{"type":"array","items":{"type":"string"}}},"required":["label","count"]}`), &schema)
	t := &mcp.Tool{Name: "echo", Title: "Echo", Description: "Answers its arguments.", InputSchema: schema,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}
	for b.Loop() {
		if _, err := pins.Define(t); err != nil {
			b.Fatal(err)
		}
	}
}
