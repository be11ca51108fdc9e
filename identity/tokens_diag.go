package identity

import "github.com/toolgate/toolgate/diag"

// CodeTokensInvalid is the code of the diagnostics of a [*TokenFileError].
const CodeTokensInvalid = "tokens_invalid"

// Diag returns p as toolgate's one kind of diagnostic about file: Key (the
// entry's digest prefix, never a token) is its Field.
func (p TokenProblem) Diag(file string) diag.Diagnostic {
	return diag.Diagnostic{Code: CodeTokensInvalid, File: file, Line: p.Line, Field: p.Key, Message: p.Message}
}

// List returns the error as a [diag.List]: a failure of the whole file
// first, then every invalid entry; it renders as Error does. errors.As
// with a *diag.List target finds it too.
func (e *TokenFileError) List() *diag.List {
	l := &diag.List{Err: e.Err, Style: &diag.Style{
		Header: func(int) string {
			if e.Path == "" {
				return "tokens"
			}
			return "tokens " + e.Path
		},
		Indent:     "  ",
		Item:       tokenItem,
		LeadInline: e.Err != nil,
	}}
	if e.Err != nil {
		l.Add(diag.Diagnostic{Code: CodeTokensInvalid, File: e.Path, Message: e.Err.Error()})
	}
	for _, p := range e.Problems {
		l.Add(p.Diag(e.Path))
	}
	return l
}

// tokenItem renders an entry's diagnostic with its digest prefix (Field)
// as `entry 0123456789ab…`.
func tokenItem(d diag.Diagnostic) string {
	if d.Field != "" {
		d.Field = "entry " + d.Field + "…"
	}
	return d.LineString()
}

// As gives errors.As the error as a *diag.List; other targets are looked
// for in Err.
func (e *TokenFileError) As(target any) bool { return diag.SetAs(target, e.List()) }
