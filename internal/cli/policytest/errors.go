package policytest

import (
	"errors"
	"fmt"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/toolgate/toolgate/diag"
	"github.com/toolgate/toolgate/internal/regoload"
)

// Stage names the step at which an [*Error] stopped the run.
type Stage string

// The stages of Run that can fail before any test runs.
const (
	StageLoad    Stage = "load"    // reading or parsing files
	StageCompile Stage = "compile" // compiling the modules together
)

// Diagnostic is one problem found in the policy or test files, as [Error]
// lists it; [Diagnostic.Diag] converts it to toolgate's one kind
// of diagnostic, which errors.As gives from any load error. Location.Row is
// a line.
type Diagnostic struct {
	// Location is where the problem is; its File is empty when unknown.
	Location Location
	// Code is OPA's error code, e.g. "rego_parse_error"; empty when the
	// problem is not a Rego error (an unreadable file, bad JSON).
	Code    string
	Message string
}

// String renders d as `file:row:col: code: message`, leaving out what is unknown.
func (d Diagnostic) String() string {
	var b strings.Builder
	if d.Location.File != "" {
		b.WriteString(d.Location.String())
		b.WriteString(": ")
	}
	if d.Code != "" {
		b.WriteString(d.Code)
		b.WriteString(": ")
	}
	b.WriteString(d.Message)
	return b.String()
}

// Error reports every problem that kept the tests from running. Run returns
// it (as error) when files fail to load or modules fail to compile.
type Error struct {
	Stage       Stage
	Diagnostics []Diagnostic
	// Err is the underlying error, kept for logs.
	Err error
}

func (e *Error) Error() string { return e.List().Error() }

func (e *Error) Unwrap() error { return e.Err }

// List returns the diagnostics as a [diag.List] (Line and Column for Row
// and Col) that renders as Error does. errors.As with a *diag.List target
// finds it too.
func (e *Error) List() *diag.List {
	l := &diag.List{Diagnostics: make([]diag.Diagnostic, len(e.Diagnostics)), Err: e.Err, Style: &diag.Style{
		Header: func(n int) string { return fmt.Sprintf("policytest: %s failed with %d error(s):", e.Stage, n) },
		Indent: "  ",
	}}
	for i, d := range e.Diagnostics {
		l.Diagnostics[i] = d.Diag()
	}
	return l
}

// As gives errors.As the diagnostics as a *diag.List; other targets are
// looked for in Err.
func (e *Error) As(target any) bool { return diag.SetAs(target, e.List()) }

// Diag returns d as toolgate's one kind of diagnostic.
func (d Diagnostic) Diag() diag.Diagnostic {
	return diag.Diagnostic{Code: d.Code, File: d.Location.File, Line: d.Location.Row, Column: d.Location.Col, Message: d.Message}
}

func diagnosticOf(d diag.Diagnostic) Diagnostic {
	return Diagnostic{Location: Location{File: d.File, Row: d.Line, Col: d.Column}, Code: d.Code, Message: d.Message}
}

// newError collects the diagnostics of a loader or compiler error.
func newError(stage Stage, err error) *Error {
	return &Error{Stage: stage, Diagnostics: diagnostics(err), Err: err}
}

func diagnostics(err error) []Diagnostic {
	var (
		aerrs ast.Errors
		aerr  *ast.Error
	)
	switch {
	case errors.As(err, &aerrs):
	case errors.As(err, &aerr):
		aerrs = ast.Errors{aerr}
	default:
		if ds := diag.From(err); ds != nil {
			out := make([]Diagnostic, len(ds))
			for i, d := range ds {
				out[i] = diagnosticOf(d)
			}
			return out
		}
		return []Diagnostic{{Message: err.Error()}}
	}
	ds := regoload.Diagnostics(aerrs)
	out := make([]Diagnostic, len(ds))
	for i, d := range ds {
		out[i] = diagnosticOf(d)
	}
	return out
}
