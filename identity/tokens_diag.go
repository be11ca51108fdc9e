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
// first, then every invalid entry. errors.As with a *diag.List target
// finds it too; Error keeps its own rendering.
func (e *TokenFileError) List() *diag.List {
	l := &diag.List{Err: e.Err}
	if e.Err != nil {
		l.Add(diag.Diagnostic{Code: CodeTokensInvalid, File: e.Path, Message: e.Err.Error()})
	}
	for _, p := range e.Problems {
		l.Add(p.Diag(e.Path))
	}
	return l
}

// As gives errors.As the error as a *diag.List; other targets are looked
// for in Err.
func (e *TokenFileError) As(target any) bool { return diag.SetAs(target, e.List()) }
