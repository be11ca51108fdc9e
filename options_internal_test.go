package toolgate

import (
	"reflect"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/frontdoor"
)

// TestOptionsAreTheCores: every option of the front door is one of its
// core's, of the same name (Registry and Policies become the core's one
// Source), and the core has no option the front door lacks; so
// Options.core maps them all and a new option is added to both.
func TestOptionsAreTheCores(t *testing.T) {
	t.Parallel()
	names := func(v any) []string {
		var out []string
		for f := range reflect.TypeOf(v).Fields() {
			out = append(out, f.Name)
		}
		slices.Sort(out)
		return out
	}
	front := slices.DeleteFunc(names(Options{}), func(n string) bool { return n == "Registry" || n == "Policies" })
	require.Equal(t, front, names(frontdoor.Options{}))
}
