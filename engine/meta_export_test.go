package engine

import "github.com/open-policy-agent/opa/v1/ast"

// ASTValue exposes, to the tests, the conversion of a Meta into the input
// document: OPA's types stay out of engine's API.
func (m Meta) ASTValue() (ast.Value, error) { return m.astValue() }
