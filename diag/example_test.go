package diag_test

import (
	"errors"
	"fmt"

	"github.com/toolgate/toolgate/diag"
)

func ExampleList() {
	var err error = &diag.List{Diagnostics: []diag.Diagnostic{
		{Code: "rego_type_error", File: "rego/grant.rego", Line: 4, Column: 2, Message: "undefined function lookup_roles"},
		{Code: "registry_invalid", File: "registry.yaml", Row: diag.RowOf(1), Tool: "echo", Field: "name", Message: `duplicate tool name "echo"`},
	}}
	var list *diag.List
	if errors.As(err, &list) {
		for _, d := range list.Diagnostics {
			fmt.Println(d.Code, "at", d.Where())
		}
	}
	fmt.Println(err)
	// Output:
	// rego_type_error at rego/grant.rego:4:2
	// registry_invalid at registry.yaml: tools[1] (echo): name
	// 2 problems
	//   rego/grant.rego:4:2: rego_type_error: undefined function lookup_roles
	//   registry.yaml: tools[1] (echo): name: registry_invalid: duplicate tool name "echo"
}
