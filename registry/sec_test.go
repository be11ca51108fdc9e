package registry_test

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRegistryRefusesUnrepresentableValues: annotations and defaults are
// part of every policy's input document; a number OPA cannot represent
// there used to be dropped silently (annotations became {}, the default
// vanished). The registry is refused at load instead, naming row and field.
func TestRegistryRefusesUnrepresentableValues(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, format, doc string
		want              []string
	}{
		{"annotation", "json", `{"tools":[{"name":"a","method":"m","annotations":{"readOnlyHint":true,"x":1e100000}}]}`,
			[]string{`tools[0] (a): annotations.x: cannot be represented in the input document: a number beyond the engine's range`}},
		{"nested annotation", "json", `{"tools":[{"name":"a","method":"m","annotations":{"x":{"y":[1,-1e99999999999]}}}]}`,
			[]string{`tools[0] (a): annotations.x.y[1]: cannot be represented in the input document: a number beyond the engine's range`}},
		{"default", "json", `{"tools":[{"name":"a","method":"m","arguments":[{"name":"f","type":"float","default":1e4567890}]}]}`,
			[]string{`tools[0] (a): arguments[0].default: cannot be represented in the input document: a number beyond the engine's range`}},
		{"default inside an object", "json", `{"tools":[{"name":"a","method":"m","arguments":[{"name":"o","type":"object","default":{"k":[1e100000]}}]}]}`,
			[]string{`tools[0] (a): arguments[0].default.k[0]: cannot be represented in the input document: a number beyond the engine's range`}},
		{"in range", "yaml", "tools:\n  - {name: a, method: m, annotations: {x: 1e300}, arguments: [{name: f, type: float, default: 1e-300}]}\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := parseProblems(t, tc.doc, tc.format, tc.want != nil)
			if tc.want != nil {
				require.Equal(t, tc.want, got)
			}
		})
	}
}
