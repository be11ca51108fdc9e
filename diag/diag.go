// Package diag is toolgate's one kind of diagnostic: a problem found in an
// operator file (registry, policy, data, tokens, config), with where it is
// and what is wrong, and [List], the error that carries every diagnostic
// found at once.
//
// A Diagnostic tells a line in a file (Line, Column: 1-based positions in
// the text) apart from a registry row (Row: the index of a row in the
// registry's tools, nil when the problem is in no row). Code is stable:
// scripts and callers match on it, never on Message.
//
// Every toolgate error that reports problems in files gives its
// diagnostics to errors.As with a *List target, whatever its own type:
//
//	var list *diag.List
//	if errors.As(err, &list) {
//		for _, d := range list.Diagnostics {
//			fmt.Println(d.File, d.Line, d.Code, d.Message)
//		}
//	}
package diag

import (
	"errors"
	"strconv"
	"strings"
)

// Diagnostic is one problem in a file. The zero value of each field means
// unknown or not applicable.
type Diagnostic struct {
	// Code names the kind of problem, e.g. "rego_type_error" (OPA's codes
	// for Rego) or "registry_invalid"; empty when there is none.
	Code string `json:"code,omitempty"`
	// File is the file, as the operator named it; empty when unknown.
	File string `json:"file,omitempty"`
	// Line and Column are 1-based positions in File; zero when unknown.
	Line   int `json:"line,omitempty"`
	Column int `json:"col,omitempty"`
	// Row is the index of the registry row the problem is in (tools[Row]),
	// nil when it is in no row. It is never a line.
	Row *int `json:"row,omitempty"`
	// Tool is the name of the row at Row, when it has one.
	Tool string `json:"tool,omitempty"`
	// Field is the path of the offending value: inside the row with Row
	// ("arguments[0].type"), from the document's root otherwise.
	Field string `json:"field,omitempty"`
	// Message says what is wrong, in full. It never holds a secret or an
	// argument value.
	Message string `json:"message"`
}

// RowOf returns a Row for the registry row index i.
func RowOf(i int) *int { return &i }

// Position renders File, Line and Column as `file:line:col`, leaving out
// what is unknown; "" without a file.
func (d Diagnostic) Position() string {
	if d.File == "" {
		return ""
	}
	s := d.File
	if d.Line > 0 {
		s += ":" + strconv.Itoa(d.Line)
		if d.Column > 0 {
			s += ":" + strconv.Itoa(d.Column)
		}
	}
	return s
}

// RowLabel renders Row and Tool as `tools[3] (getReward)`; "" without a row.
func (d Diagnostic) RowLabel() string {
	if d.Row == nil {
		return ""
	}
	s := "tools[" + strconv.Itoa(*d.Row) + "]"
	if d.Tool != "" {
		s += " (" + d.Tool + ")"
	}
	return s
}

// Where renders the diagnostic's location: `file:line:col: tools[2]
// (name): field`, leaving out what is unknown; "" when it has none.
func (d Diagnostic) Where() string {
	return join(d.Position(), d.RowLabel(), d.Field)
}

// String renders the diagnostic as `where: code: message`, leaving out
// what is unknown.
func (d Diagnostic) String() string {
	return join(d.Where(), d.Code, d.Message)
}

// LineString renders the diagnostic as `line 3: field: message`, leaving
// out what is unknown, for a list whose header already names the one file
// it is about (a config file, a tokens file): File, Column and Code are not
// shown.
func (d Diagnostic) LineString() string {
	line := ""
	if d.Line > 0 {
		line = "line " + strconv.Itoa(d.Line)
	}
	if where := join(line, d.Field); where != "" {
		return where + ": " + d.Message
	}
	return d.Message
}

func join(parts ...string) string {
	var b strings.Builder
	for _, p := range parts {
		if p == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(": ")
		}
		b.WriteString(p)
	}
	return b.String()
}

// Style says how a List renders as text, so that each kind of error keeps
// the shape its readers know. The zero Style renders a count line, then
// each diagnostic's String on a line of its own, indented by two spaces.
type Style struct {
	// Header renders the first line from the number of diagnostics; nil
	// is "N problem(s)".
	Header func(n int) string
	// Indent prefixes each diagnostic's line.
	Indent string
	// Item renders one diagnostic; nil is Diagnostic.String.
	Item func(Diagnostic) string
	// Inline puts the diagnostics on the header's line instead, as
	// `header: a; b` (just `a; b` when Header is nil), for errors that
	// read as one sentence.
	Inline bool
	// LeadInline puts only the first diagnostic on the header's line, as
	// `header: first`, and the rest on lines of their own below it: for an
	// error whose first diagnostic is the one the others follow (a file
	// that could not be read as a whole) or whose lone one reads as a
	// sentence. It has no effect with Inline.
	LeadInline bool
}

// List is an error reporting every problem found in one load: nothing of
// what it is about was loaded. Diagnostics are in the order they were found
// (by file, then position).
type List struct {
	Diagnostics []Diagnostic
	// Err is the underlying error, when there is one (an *fs.PathError of a
	// file that cannot be read, OPA's errors): errors.Is and errors.As see
	// it through Unwrap. It is kept for logs; Error does not render it.
	Err error
	// Style renders Error; nil is the zero Style with a two-space indent.
	Style *Style
}

// Error renders the header line, then one line per diagnostic.
func (l *List) Error() string {
	st := Style{Indent: "  "}
	if l.Style != nil {
		st = *l.Style
	}
	item := Diagnostic.String
	if st.Item != nil {
		item = st.Item
	}
	var b strings.Builder
	if st.Inline {
		if st.Header != nil {
			b.WriteString(st.Header(len(l.Diagnostics)) + ": ")
		}
		for i, d := range l.Diagnostics {
			if i > 0 {
				b.WriteString("; ")
			}
			b.WriteString(item(d))
		}
		return b.String()
	}
	if st.Header != nil {
		b.WriteString(st.Header(len(l.Diagnostics)))
	} else {
		b.WriteString(strconv.Itoa(len(l.Diagnostics)) + " problem")
		if len(l.Diagnostics) != 1 {
			b.WriteString("s")
		}
	}
	below := l.Diagnostics
	if st.LeadInline && len(below) > 0 {
		b.WriteString(": " + item(below[0]))
		below = below[1:]
	}
	for _, d := range below {
		b.WriteString("\n")
		b.WriteString(st.Indent)
		b.WriteString(item(d))
	}
	return b.String()
}

// Unwrap returns Err.
func (l *List) Unwrap() error { return l.Err }

// Add appends diagnostics to the list.
func (l *List) Add(ds ...Diagnostic) { l.Diagnostics = append(l.Diagnostics, ds...) }

// Len is the number of diagnostics; 0 for a nil List.
func (l *List) Len() int {
	if l == nil {
		return 0
	}
	return len(l.Diagnostics)
}

// From returns the diagnostics of err: those of the *List in its chain, or
// nil when there is none.
func From(err error) []Diagnostic {
	var l *List
	if errors.As(err, &l) {
		return l.Diagnostics
	}
	return nil
}

// SetAs is the As method of an error type that is a view of a List: it
// stores l in target when target is a **List, and reports whether it did.
//
//	func (e *MyError) As(target any) bool { return diag.SetAs(target, e.List()) }
func SetAs(target any, l *List) bool {
	p, ok := target.(**List)
	if ok {
		*p = l
	}
	return ok
}
