package regoload

import (
	"context"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/storage"

	"github.com/toolgate/toolgate/diag"
)

// CopyPrefix begins the names of the rules engine copies for provenance; a
// diagnostic never shows it.
const CopyPrefix = "toolgate__"

// NewCompiler returns the one compiler configuration, for serving and for
// testing alike: the built-ins of caps (a call of another one fails,
// naming it and its line), type checking that reads the schemas of METADATA
// annotations, and no rule whose path is also a data document in txn of
// store. txn must stay open until Compile has returned. print keeps print()
// calls (they are dropped otherwise, after being checked).
//
// A nil store checks no paths: for modules toolgate generates from
// compiled ones (partial evaluation's), never for files.
func NewCompiler(ctx context.Context, caps *ast.Capabilities, store storage.Store, txn storage.Transaction, print bool) *ast.Compiler {
	c := ast.NewCompiler().
		WithCapabilities(caps).
		WithUseTypeCheckAnnotations(true).
		WithEnablePrintStatements(print)
	if store != nil {
		c = c.WithPathConflictsCheck(storage.NonEmpty(ctx, store, txn))
	}
	return c
}

// Diagnostics converts OPA's parse or compile errors, in order. An error
// inside a rule engine copied for provenance is reported once, not once per
// copy, and under the rule's own name.
func Diagnostics(errs ast.Errors) []diag.Diagnostic {
	var out []diag.Diagnostic
	type key struct {
		code, file, msg string
		line, col       int
	}
	seen := map[key]bool{}
	for _, e := range errs {
		d := diag.Diagnostic{Code: e.Code, Message: strings.ReplaceAll(e.Message, CopyPrefix, "")}
		if l := e.Location; l != nil {
			d.File, d.Line, d.Column = l.File, l.Row, l.Col
		}
		k := key{d.Code, d.File, d.Message, d.Line, d.Column}
		if !seen[k] {
			seen[k] = true
			out = append(out, d)
		}
	}
	return out
}
