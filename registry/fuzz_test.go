package registry_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/schema"
)

// FuzzParse checks that Parse never panics and always answers either a
// registry or a typed error, and that every row of a registry it accepts
// yields an input schema that compiles.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"valid.yaml", "valid.json", "five-mistakes.yaml", "unknown-section.yaml"} {
		data, err := os.ReadFile(filepath.Join("testdata", "registry", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, filepath.Ext(name) == ".json")
	}
	f.Add([]byte(`tools: [{name: t, method: m, arguments: [{name: a, type: int, default: 0x1F}]}]`), false)
	f.Add([]byte(`tools: [{name: t, method: m, arguments: [{name: p, type: Money, default: {amount: "1", currency: EUR}}]}]`), false)
	f.Add([]byte(`{"tools": [{"name": "t", "method": "upstream:a/b", "arguments": [{"name": "a", "type": "array", "items": {"type": "string"}}]}]}`), true)
	f.Add([]byte(`a: &a [*a]`), false)
	f.Add([]byte(`{"tools": [], "tools": []}`), true)

	f.Fuzz(func(t *testing.T, data []byte, isJSON bool) {
		format := "yaml"
		if isJSON {
			format = "json"
		}
		r, err := registry.Parse(data, format)
		if err != nil {
			if r != nil {
				t.Fatalf("a registry and an error: %v", err)
			}
			var ve *registry.ValidationError
			var pe *registry.ParseError
			if !errors.As(err, &ve) && !errors.As(err, &pe) {
				t.Fatalf("untyped error %T: %v", err, err)
			}
			if ve != nil && len(ve.Problems) == 0 {
				t.Fatal("a ValidationError without problems")
			}
			return
		}
		if r == nil {
			t.Fatal("neither a registry nor an error")
		}
		for i := range r.Tools {
			tool := &r.Tools[i]
			if r.Tool(tool.Name) != tool {
				t.Fatalf("Tool(%q) is not row %d", tool.Name, i)
			}
			s := tool.InputSchema()
			if _, err := json.Marshal(s); err != nil {
				t.Fatalf("row %d: input schema does not encode: %v", i, err)
			}
			if _, err := schema.CompileValue(s); err != nil {
				t.Fatalf("row %d: input schema does not compile: %v", i, err)
			}
		}
	})
}
