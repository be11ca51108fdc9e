package config

import "github.com/toolgate/toolgate/diag"

// CodeInvalid is the code of the diagnostics of an [*Error].
const CodeInvalid = "config_invalid"

// Diag returns p as toolgate's one kind of diagnostic about file: Key (the
// setting, e.g. "upstreams[1]" or "--ledger") is its Field.
func (p Problem) Diag(file string) diag.Diagnostic {
	return diag.Diagnostic{Code: CodeInvalid, File: file, Line: p.Line, Field: p.Key, Message: p.Message}
}

// List returns the error as a [diag.List]: a failure of the whole file
// first, then every problem; it renders as Error does. errors.As with a
// *diag.List target finds it too.
func (e *Error) List() *diag.List {
	l := &diag.List{Err: e.Err, Style: &diag.Style{
		Header: func(int) string {
			if e.Path == "" {
				return "config"
			}
			return "config " + e.Path
		},
		Indent:     "  ",
		Item:       diag.Diagnostic.LineString,
		LeadInline: e.Err != nil || len(e.Problems) == 1,
	}}
	if e.Err != nil {
		l.Add(diag.Diagnostic{Code: CodeInvalid, File: e.Path, Message: e.Err.Error()})
	}
	for _, p := range e.Problems {
		l.Add(p.Diag(e.Path))
	}
	return l
}

// As gives errors.As the error as a *diag.List; other targets are looked
// for in Err.
func (e *Error) As(target any) bool { return diag.SetAs(target, e.List()) }
