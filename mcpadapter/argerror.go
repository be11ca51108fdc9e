package mcpadapter

import (
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/toolcall"
)

// argumentError is the ArgumentError of the row's declared argument a:
// name, type and whether the type is internal come from the row, whatever
// the validator or the method said.
func argumentError(a *registry.Argument, p toolcall.ArgumentProblem, err error) *toolcall.ArgumentError {
	return &toolcall.ArgumentError{Problem: p, Name: a.Name, Type: a.Type, Internal: !registry.IsPrimitive(a.Type), Err: err}
}
