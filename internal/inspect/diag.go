package inspect

import "github.com/toolgate/toolgate/diag"

// Diag returns f as toolgate's one kind of diagnostic. Caller and Tools,
// which a diagnostic has no field for, are left out; Code and Where are
// the same.
func (f Finding) Diag() diag.Diagnostic {
	return diag.Diagnostic{Code: f.Code, File: f.File, Line: f.Line, Column: f.Col, Row: f.Row, Tool: f.Tool, Field: f.Field, Message: f.Message}
}

// Err returns the report's errors as a *[diag.List], nil when the check
// found none.
func (r *CheckReport) Err() error {
	if r.OK() {
		return nil
	}
	l := &diag.List{}
	for _, f := range r.Errors {
		l.Add(f.Diag())
	}
	return l
}
