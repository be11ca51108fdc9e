// Package lines writes a report a line at a time and keeps the first write
// error, so that the code of a report (inspect's check and explain,
// policytest's pretty output) writes every line and checks once:
//
//	w := lines.New(out)
//	w.Line("%d problems", n)
//	w.Indented(detail, "  ")
//	return w.Err()
package lines

import (
	"fmt"
	"io"
	"strings"
)

// Writer writes lines to an io.Writer until a write fails; from then on it
// writes nothing and Err returns that failure. It is not safe for
// concurrent use.
type Writer struct {
	w   io.Writer
	err error
}

// New returns a Writer to w.
func New(w io.Writer) *Writer { return &Writer{w: w} }

// Line writes format, formatted with args as fmt.Fprintf does, and a newline.
func (p *Writer) Line(format string, args ...any) {
	if p.err != nil {
		return
	}
	_, p.err = fmt.Fprintf(p.w, format+"\n", args...)
}

// Indented writes each line of text, indent first.
func (p *Writer) Indented(text, indent string) {
	for l := range strings.SplitSeq(text, "\n") {
		p.Line("%s%s", indent, l)
	}
}

// Err returns the first write error, nil when every write succeeded.
func (p *Writer) Err() error { return p.err }
