package policytest

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
)

// Status is the outcome of one test.
type Status string

// The outcomes of a test, as `opa test` counts them.
const (
	StatusPass  Status = "pass"
	StatusFail  Status = "fail"  // the test body did not hold
	StatusError Status = "error" // evaluation failed: a runtime error, a conflict, a time-out
	StatusSkip  Status = "skip"  // a todo_test_ rule
)

// Location is a position in a policy or test file. Row and Col are 1-based;
// zero when unknown.
type Location struct {
	File string
	Row  int
	Col  int
}

// String renders l as `file:row:col`, or `file:row` without a column.
func (l Location) String() string {
	switch {
	case l.Row == 0:
		return l.File
	case l.Col == 0:
		return fmt.Sprintf("%s:%d", l.File, l.Row)
	default:
		return fmt.Sprintf("%s:%d:%d", l.File, l.Row, l.Col)
	}
}

func location(loc *ast.Location) Location {
	if loc == nil {
		return Location{}
	}
	return Location{File: loc.File, Row: loc.Row, Col: loc.Col}
}

// Result is the outcome of one test rule.
type Result struct {
	// Package is the test's package as a data reference, e.g.
	// "data.toolgate.grant_test"; Name is the rule, e.g. "test_contractor".
	Package  string
	Name     string
	Status   Status
	Duration time.Duration
	// Location is where the test rule is defined.
	Location Location
	// Output is what the test printed with print(); empty when nothing.
	Output string
	// Error is the evaluation error of a StatusError test, with its location.
	Error string
	// FailedAt is the expression at which a failing test stopped, when a
	// trace was recorded (Options.Trace); nil otherwise.
	FailedAt *Location
	// VarValues is the expression a failing test stopped at, with the
	// values of its variables, rendered as `opa test --var-values` does;
	// only with Options.VarValues.
	VarValues string
	// Trace is the evaluation trace of a failing or erroring test, rendered
	// like `opa test -v`; only with Options.Trace.
	Trace string
	// Cases are the test cases of a rule written as `test_x[name] if ...`,
	// in sorted order; nil for a plain test.
	Cases []Case
}

// FullName is the test's reference, e.g. "data.toolgate.grant_test.test_x".
func (r Result) FullName() string { return r.Package + "." + r.Name }

// Case is one test case of a test rule with cases.
type Case struct {
	// Path names the case, one element per level of nesting.
	Path []string
	Fail bool
}

// Coverage is the coverage of the policy files, traced over every test that
// ran. Files whose names end in _test.rego are not counted.
type Coverage struct {
	// Files are sorted by name.
	Files           []FileCoverage
	CoveredLines    int
	NotCoveredLines int
	// Percent is covered lines over all counted lines, 0 to 100; 0 when
	// there are no lines to cover.
	Percent float64
}

// FileCoverage is the coverage of one policy file.
type FileCoverage struct {
	File            string
	CoveredLines    int
	NotCoveredLines int
	Percent         float64
	// NotCovered are the lines no test reached, in order.
	NotCovered []LineRange
}

// LineRange is an inclusive range of lines.
type LineRange struct{ Start, End int }

func (lr LineRange) String() string {
	if lr.Start == lr.End {
		return fmt.Sprint(lr.Start)
	}
	return fmt.Sprintf("%d-%d", lr.Start, lr.End)
}

// Under returns the coverage of the files in directory dir (at any depth),
// totals recomputed. Paths compare as written in Options.Paths, cleaned.
func (c *Coverage) Under(dir string) *Coverage {
	prefix := filepath.ToSlash(filepath.Clean(dir)) + "/"
	var files []FileCoverage
	for _, f := range c.Files {
		if strings.HasPrefix(filepath.ToSlash(filepath.Clean(f.File)), prefix) {
			files = append(files, f)
		}
	}
	return summarize(files)
}

func summarize(files []FileCoverage) *Coverage {
	c := &Coverage{Files: files}
	for _, f := range files {
		c.CoveredLines += f.CoveredLines
		c.NotCoveredLines += f.NotCoveredLines
	}
	c.Percent = percent(c.CoveredLines, c.NotCoveredLines)
	return c
}

func percent(covered, notCovered int) float64 {
	if covered+notCovered == 0 {
		return 0
	}
	return 100 * float64(covered) / float64(covered+notCovered)
}

// Report is the outcome of a Run.
type Report struct {
	// Results are sorted by file, line, package and name.
	Results []Result
	// Coverage is nil unless Options.Coverage was set.
	Coverage *Coverage
}

// Counts returns how many tests passed, failed, errored and were skipped.
// A test with cases counts each leaf case, as `opa test` does.
func (r *Report) Counts() (pass, fail, errored, skip int) {
	for _, res := range r.Results {
		switch {
		case res.Status == StatusSkip:
			skip++
		case res.Status == StatusError:
			errored++
		case len(res.Cases) > 0:
			for _, c := range res.Cases {
				if c.Fail {
					fail++
				} else {
					pass++
				}
			}
		case res.Status == StatusFail:
			fail++
		default:
			pass++
		}
	}
	return pass, fail, errored, skip
}

// Passed reports whether no test failed or errored. Skipped tests do not
// fail a report, and neither does a report without tests.
func (r *Report) Passed() bool {
	for _, res := range r.Results {
		if res.Status == StatusFail || res.Status == StatusError {
			return false
		}
	}
	return true
}

// Failed returns the tests that failed or errored, in report order.
func (r *Report) Failed() []Result {
	var out []Result
	for _, res := range r.Results {
		if res.Status == StatusFail || res.Status == StatusError {
			out = append(out, res)
		}
	}
	return out
}
