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
	"slices"
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
	return FormatWith(r, w, Options{})
}

// Options add lines to Format's end.
type Options struct {
	// Slowest, when above 0, adds a line naming that many of the slowest
	// packages that ran tests, slowest first, with their times.
	Slowest int
	// Skips adds a line per skipped test, with the reason it gave.
	Skips bool
}

// FormatWith is Format, then the lines o asks for.
func FormatWith(r io.Reader, w io.Writer, o Options) (Summary, error) {
	var s Summary
	type timing struct {
		pkg     string
		elapsed float64
	}
	var times []timing
	var skips []string
	testOut := map[[2]string]*strings.Builder{} // a test's output, kept until it ends
	out := map[string]*strings.Builder{}        // a package's output, kept until it ends
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
			if o.Skips && e.Test != "" {
				k := [2]string{e.Package, e.Test}
				if testOut[k] == nil {
					testOut[k] = &strings.Builder{}
				}
				testOut[k].WriteString(e.Output)
			}
		case "pass", "fail", "skip":
			if e.Test != "" {
				// a test's end: its output stays with its package's
				k := [2]string{e.Package, e.Test}
				if e.Action == "skip" && o.Skips {
					skips = append(skips, fmt.Sprintf("SKIP  %s %s: %s", e.Package, e.Test, skipReason(testOut[k])))
				}
				delete(testOut, k)
				continue
			}
			if e.Action != "skip" {
				times = append(times, timing{e.Package, e.Elapsed})
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
	if o.Skips {
		fmt.Fprintf(w, "%d tests skipped\n", len(skips))
		for _, l := range skips {
			fmt.Fprintln(w, l)
		}
	}
	if o.Slowest > 0 && len(times) > 0 {
		slices.SortStableFunc(times, func(a, b timing) int {
			switch {
			case a.elapsed > b.elapsed:
				return -1
			case a.elapsed < b.elapsed:
				return 1
			}
			return 0
		})
		var parts []string
		for _, t := range times[:min(o.Slowest, len(times))] {
			parts = append(parts, fmt.Sprintf("%s (%.1fs)", t.pkg, t.elapsed))
		}
		fmt.Fprintf(w, "slowest: %s\n", strings.Join(parts, ", "))
	}
	return s, nil
}

// skipReason is the last line a skipped test printed (t.Skip's message),
// without its file:line prefix; "" when it printed none.
func skipReason(b *strings.Builder) string {
	if b == nil {
		return ""
	}
	var last string
	for _, l := range strings.Split(b.String(), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "=== ") || strings.HasPrefix(l, "--- SKIP") {
			continue
		}
		last = l
	}
	if _, rest, ok := strings.Cut(last, ".go:"); ok {
		if _, msg, ok := strings.Cut(rest, ": "); ok {
			return msg
		}
	}
	return last
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
