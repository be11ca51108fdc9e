package registry

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
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
func (e *ValidationError) Error() string {
	var b strings.Builder
	b.WriteString("registry")
	if e.File != "" {
		b.WriteString(" " + e.File)
	}
	n := len(e.Problems)
	if n == 1 {
		b.WriteString(": 1 problem")
	} else {
		fmt.Fprintf(&b, ": %d problems", n)
	}
	for _, p := range e.Problems {
		b.WriteString("\n")
		b.WriteString(p.String())
	}
	return b.String()
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
