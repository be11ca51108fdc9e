// Package testprogress turns the event stream of `go test -json` into one
// line per package as each finishes (in the order they finish, with how
// many are done), and the whole output of every package or test that
// failed, for scripts/test: a long `go test -race` run shows its
// progress instead of nothing until the first package in order is done.
package testprogress

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json), also the
// build-output and build-fail events go test writes for packages that do
// not build.
type event struct {
	Action      string
	Package     string
	Test        string
	Elapsed     float64
	Output      string
	ImportPath  string
	FailedBuild string
}

// Summary is what a stream held.
type Summary struct {
	Passed, Failed, Skipped int
}

// Format reads `go test -json` from r and writes to w: a line per package
// as it ends ("ok", "FAIL", or "skip" for a package without tests, with
// its time and the count of packages ended), the output of each failed
// package (its failed tests' output and what it printed outside tests),
// build failures, and lines that are not JSON as they are (go vet's or
// the go command's own messages). A line longer than 16 MiB is an error.
func Format(r io.Reader, w io.Writer) (Summary, error) {
	var s Summary
	out := map[string]*strings.Builder{} // a package's output, kept until it ends
	build := map[string]*strings.Builder{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			fmt.Fprintf(w, "%s\n", line)
			continue
		}
		switch e.Action {
		case "build-output":
			b := build[e.ImportPath]
			if b == nil {
				b = &strings.Builder{}
				build[e.ImportPath] = b
			}
			b.WriteString(e.Output)
		case "build-fail":
			fmt.Fprintf(w, "BUILD FAIL %s\n%s", e.ImportPath, build[e.ImportPath])
			delete(build, e.ImportPath)
		case "output":
			b := out[e.Package]
			if b == nil {
				b = &strings.Builder{}
				out[e.Package] = b
			}
			b.WriteString(e.Output)
		case "pass", "fail", "skip":
			if e.Test != "" {
				continue // a test's end: its output stays with its package's
			}
			done := s.Passed + s.Failed + s.Skipped + 1
			switch {
			case e.Action == "fail":
				s.Failed++
				fmt.Fprintf(w, "FAIL  %s (%.1fs) [%d done]\n", e.Package, e.Elapsed, done)
				if b := out[e.Package]; b != nil {
					fmt.Fprint(w, indent(b.String()))
				}
				if e.FailedBuild != "" {
					fmt.Fprintf(w, "      (does not build: %s)\n", e.FailedBuild)
				}
			case e.Action == "skip":
				s.Skipped++
				fmt.Fprintf(w, "-     %s (no tests) [%d done]\n", e.Package, done)
			default:
				s.Passed++
				fmt.Fprintf(w, "ok    %s (%.1fs) [%d done]\n", e.Package, e.Elapsed, done)
			}
			delete(out, e.Package)
		}
	}
	if err := sc.Err(); err != nil {
		return s, fmt.Errorf("reading go test -json: %w", err)
	}
	fmt.Fprintf(w, "%d packages passed, %d failed, %d without tests\n", s.Passed, s.Failed, s.Skipped)
	return s, nil
}

// indent indents each line of s by six spaces.
func indent(s string) string {
	if s == "" {
		return ""
	}
	lines := strings.SplitAfter(s, "\n")
	var b strings.Builder
	for _, l := range lines {
		if l != "" {
			b.WriteString("      " + l)
		}
	}
	if !strings.HasSuffix(s, "\n") {
		b.WriteString("\n")
	}
	return b.String()
}
