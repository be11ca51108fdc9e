package policytest

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/toolgate/toolgate/internal/lines"
)

// PrettyOptions tunes [Report.WritePrettyOpts].
type PrettyOptions struct {
	// Verbose lists every test, not only those that did not pass, and the
	// trace of failing tests when one was recorded (Options.Trace).
	Verbose bool
	// HideDurations leaves durations out, for output compared byte for byte.
	HideDurations bool
}

// WritePretty writes r the way `opa test` prints its results: a
// `file:row:` line and a `data.pkg.test_x: FAIL (1.2ms)` line for each test
// that did not pass (every test when verbose), then the counts (`PASS: 5/5`,
// `FAIL: 1/5`, `ERROR: …`, `SKIPPED: …`) and, when coverage was traced, a
// `Coverage:` table. It returns the first write error.
func (r *Report) WritePretty(w io.Writer, verbose bool) error {
	return r.WritePrettyOpts(w, PrettyOptions{Verbose: verbose})
}

// WritePrettyOpts is WritePretty with every option.
func (r *Report) WritePrettyOpts(w io.Writer, opts PrettyOptions) error {
	bw := bufio.NewWriter(w)
	p := lines.New(bw)

	dirty := false
	lastFile := ""
	for _, res := range r.Results {
		if !opts.Verbose && res.Status == StatusPass {
			continue
		}
		dirty = true
		if res.Location.File != "" {
			if lastFile != "" && lastFile != res.Location.File {
				p.Line("")
			}
			p.Line("%s:%d:", res.Location.File, res.Location.Row)
			lastFile = res.Location.File
		}
		p.Line("%s", headline(res, opts.HideDurations))
		for _, c := range res.Cases {
			if c.Fail || opts.Verbose {
				p.Line("  %s: %s", strings.Join(c.Path, " / "), caseOutcome(c))
			}
		}
		if out := strings.TrimSpace(res.Output); out != "" {
			p.Line("")
			p.Indented(out, "  ")
			p.Line("")
		}
		if res.Error != "" {
			p.Indented(res.Error, "  ")
		}
		if res.VarValues != "" {
			p.Line("")
			p.Indented(strings.TrimRight(res.VarValues, "\n"), "  ")
			p.Line("")
		} else if res.FailedAt != nil {
			p.Line("  failed at %s", res.FailedAt)
		}
		if opts.Verbose && res.Trace != "" {
			p.Line("")
			p.Indented(strings.TrimRight(res.Trace, "\n"), "  ")
		}
	}
	if dirty {
		p.Line("%s", strings.Repeat("-", 80))
	}

	pass, fail, errored, skip := r.Counts()
	total := pass + fail + errored + skip
	for _, c := range []struct {
		label string
		n     int
	}{{"PASS", pass}, {"FAIL", fail}, {"SKIPPED", skip}, {"ERROR", errored}} {
		if c.n != 0 {
			p.Line("%s: %d/%d", c.label, c.n, total)
		}
	}
	if total == 0 {
		p.Line("no tests were run")
	}

	if r.Coverage != nil {
		writeCoverage(p, r.Coverage)
	}

	if err := p.Err(); err != nil {
		return err
	}
	return bw.Flush()
}

func headline(res Result, hideDurations bool) string {
	s := res.FullName() + ": " + outcome(res.Status)
	if res.Status == StatusSkip || hideDurations {
		return s
	}
	return s + " (" + res.Duration.String() + ")"
}

func outcome(s Status) string {
	switch s {
	case StatusPass:
		return "PASS"
	case StatusFail:
		return "FAIL"
	case StatusSkip:
		return "SKIPPED"
	default:
		return "ERROR"
	}
}

func caseOutcome(c Case) string {
	if c.Fail {
		return "FAIL"
	}
	return "PASS"
}

func writeCoverage(p *lines.Writer, c *Coverage) {
	p.Line("Coverage:")
	width := len("total")
	for _, f := range c.Files {
		width = max(width, len(f.File))
	}
	row := func(name string, pct float64, covered, notCovered int, missing []LineRange) {
		s := fmt.Sprintf("  %-*s %7.2f%%  %d/%d lines", width, name, pct, covered, covered+notCovered)
		if len(missing) > 0 {
			ranges := make([]string, len(missing))
			for i, m := range missing {
				ranges[i] = m.String()
			}
			s += "  not covered: " + strings.Join(ranges, ", ")
		}
		p.Line("%s", s)
	}
	for _, f := range c.Files {
		row(f.File, f.Percent, f.CoveredLines, f.NotCoveredLines, f.NotCovered)
	}
	row("total", c.Percent, c.CoveredLines, c.NotCoveredLines, nil)
}
