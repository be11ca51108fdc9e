package registry

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/toolgate/toolgate/diag"
)

// ErrInvalid is matched by errors.Is for every [*ValidationError]: the
// document was read but does not make a registry.
var ErrInvalid = errors.New("registry: invalid registry")

// Problem is one thing wrong (or, from [Registry.Warnings], worth knowing)
// about a registry document.
type Problem struct {
	// Row is the index of the row in tools, or -1 when the problem is not
	// inside a row.
	Row int
	// Tool is the row's name, when it has a string one.
	Tool string
	// Field is the path of the offending value: relative to the row
	// ("arguments[0].type") when Row >= 0, from the document's root
	// ("sections.rewards.roles") otherwise; empty for the row (or the
	// document) itself.
	Field string
	// Message says what is wrong, in toolgate's words.
	Message string
}

// String renders the problem as `tools[3] (getReward): arguments[0].type:
// unknown type "Mony"`.
func (p Problem) String() string {
	var parts []string
	if p.Row >= 0 {
		row := "tools[" + strconv.Itoa(p.Row) + "]"
		if p.Tool != "" {
			row += " (" + p.Tool + ")"
		}
		parts = append(parts, row)
	}
	if p.Field != "" {
		parts = append(parts, p.Field)
	}
	parts = append(parts, p.Message)
	return strings.Join(parts, ": ")
}

// ValidationError is returned when a registry document is well-formed YAML
// or JSON but not a valid registry. It holds every problem found, in
// document order; the registry is refused whole.
type ValidationError struct {
	// File is the path given to [Load]; empty from [Parse].
	File     string
	Problems []Problem
}

// Error renders a count, then one problem per line.
func (e *ValidationError) Error() string { return e.List().Error() }

// Codes of the diagnostics registry errors give as a [diag.List].
const (
	CodeInvalid = "registry_invalid" // one problem of a document that does not validate
	CodeParse   = "registry_parse"   // a document that is not well-formed YAML or JSON
)

// Diag returns p as toolgate's one kind of diagnostic, about file, with
// Code [CodeInvalid]; a Row of -1 is no row.
func (p Problem) Diag(file string) diag.Diagnostic {
	d := diag.Diagnostic{Code: CodeInvalid, File: file, Tool: p.Tool, Field: p.Field, Message: p.Message}
	if p.Row >= 0 {
		d.Row = diag.RowOf(p.Row)
	}
	return d
}

// List returns the problems as a [diag.List] that renders as Error does.
// errors.As with a *diag.List target finds it too.
func (e *ValidationError) List() *diag.List {
	l := &diag.List{Diagnostics: make([]diag.Diagnostic, len(e.Problems)), Style: &diag.Style{
		Header: func(n int) string {
			var b strings.Builder
			b.WriteString("registry")
			if e.File != "" {
				b.WriteString(" " + e.File)
			}
			if n == 1 {
				b.WriteString(": 1 problem")
			} else {
				fmt.Fprintf(&b, ": %d problems", n)
			}
			return b.String()
		},
		Item: func(d diag.Diagnostic) string { return problemOf(d).String() },
	}}
	for i, p := range e.Problems {
		l.Diagnostics[i] = p.Diag(e.File)
	}
	return l
}

// As gives errors.As the problems as a *diag.List.
func (e *ValidationError) As(target any) bool { return diag.SetAs(target, e.List()) }

func problemOf(d diag.Diagnostic) Problem {
	p := Problem{Row: -1, Tool: d.Tool, Field: d.Field, Message: d.Message}
	if d.Row != nil {
		p.Row = *d.Row
	}
	return p
}

// Is reports whether target is [ErrInvalid].
func (e *ValidationError) Is(target error) bool { return target == ErrInvalid }

// ParseError is returned when a registry document is not well-formed YAML or
// JSON (or holds a value JSON cannot represent, such as .inf or a duplicate
// key).
type ParseError struct {
	// File is the path given to [Load]; empty from [Parse].
	File string
	// Format is "yaml" or "json".
	Format string
	// Line is the 1-based line of the problem, 0 when unknown.
	Line int
	// Err is the underlying error.
	Err error
}

func (e *ParseError) Error() string {
	var b strings.Builder
	b.WriteString("registry")
	if e.File != "" {
		b.WriteString(" " + e.File)
	}
	b.WriteString(": not valid " + strings.ToUpper(e.Format))
	if e.Line > 0 {
		fmt.Fprintf(&b, " (line %d)", e.Line)
	}
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *ParseError) Unwrap() error { return e.Err }

// List returns the error as a [diag.List] of one diagnostic, with Code
// [CodeParse] and the list's default rendering. errors.As with a
// *diag.List target finds it too.
func (e *ParseError) List() *diag.List {
	return &diag.List{
		Diagnostics: []diag.Diagnostic{{Code: CodeParse, File: e.File, Line: e.Line,
			Message: "not valid " + strings.ToUpper(e.Format) + ": " + e.Err.Error()}},
		Err: e.Err,
	}
}

// As gives errors.As the error as a *diag.List; other targets are looked
// for in Err.
func (e *ParseError) As(target any) bool { return diag.SetAs(target, e.List()) }
