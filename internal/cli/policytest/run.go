package policytest

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/cover"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/tester"
	"github.com/open-policy-agent/opa/v1/topdown"

	"github.com/toolgate/toolgate/diag"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/internal/regoload"
)

// DefaultTimeout is the time one test may take when Options.Timeout is zero,
// the default of `opa test`.
const DefaultTimeout = 5 * time.Second

// Options says what Run loads and how it runs the tests.
type Options struct {
	// Paths are files or directories, read as the server reads its policy
	// directory (one loader, internal/regoload): directories are walked
	// for *.rego files (tests included) and data documents named
	// data.json, data.yaml or data.yml, which load under the data path of
	// their directory, as with `opa test`. Below a named path, files and
	// directories whose names begin with "." are skipped (a ConfigMap's
	// ..2026_… folders); symlinks, also into them, are followed. A file
	// named explicitly is loaded whatever its name. Every file is read
	// only if it is a regular file of at most 16 MiB.
	Paths []string
	// Coverage traces which policy lines the tests reach; see Report.Coverage.
	Coverage bool
	// Filter, when not empty, is a regular expression: only tests whose
	// reference (e.g. data.toolgate.grant_test.test_x) matches it run.
	Filter string
	// Timeout bounds each test; zero means DefaultTimeout.
	Timeout time.Duration
	// Trace records the evaluation of each test and keeps it, rendered, on
	// tests that fail or error (Result.Trace, Result.FailedAt). It slows the
	// run down.
	Trace bool
	// VarValues shows, for each failing test, the expression it failed at
	// with the values of its variables, as `opa test --var-values`
	// (Result.VarValues). It traces the tests, so it slows the run down.
	VarValues bool
	// Capabilities are the built-ins policies and tests may call, as the
	// server compiles them (docs/contract.md §11; a file read by
	// regoload.LoadCapabilities, as engine.LoadCapabilities reads it); nil
	// is engine.DefaultCapabilities, without network built-ins. A call of
	// another built-in fails to compile, naming it and its line.
	Capabilities *ast.Capabilities
}

// Run loads the policies and tests under opts.Paths, compiles them together
// and runs every test rule, like `opa test`.
//
// A failing test is not an error: it is a Result in the Report. Run returns
// an error, and no report, when nothing could run: a file that does not load
// or parse, or modules that do not compile (an [*Error] listing every
// diagnostic with its file and line), an invalid Filter, no Paths, or ctx
// ending before the tests finished.
func Run(ctx context.Context, opts Options) (*Report, error) {
	if len(opts.Paths) == 0 {
		return nil, errors.New("policytest: no paths to load")
	}
	if opts.Filter != "" {
		if _, err := regexp.Compile(opts.Filter); err != nil {
			return nil, fmt.Errorf("policytest: invalid filter: %w", err)
		}
	}

	caps := opts.Capabilities
	if caps == nil {
		caps = regoload.DefaultCapabilities(engine.NetworkBuiltins)
	}
	files, err := load(opts.Paths)
	if err != nil {
		return nil, err
	}
	parsed, err := regoload.Parse(files, caps)
	if err != nil {
		return nil, newError(StageLoad, err)
	}
	modules := parsed.Modules

	store := inmem.NewFromObject(parsed.Data)
	txn, err := store.NewTransaction(ctx)
	if err != nil {
		return nil, fmt.Errorf("policytest: %w", err)
	}
	defer store.Abort(ctx, txn)

	compiler := regoload.NewCompiler(ctx, caps, store, txn, true).
		// As opa test --var-values: a test's expressions are rewritten so
		// that the values of its variables can be shown.
		WithRewriteTestRules(opts.VarValues)

	runner := tester.NewRunner().
		SetCompiler(compiler).
		SetStore(store).
		SetModules(modules).
		CapturePrintOutput(true).
		EnableTracing(opts.Trace || opts.VarValues).
		StackTraces(true).
		SetTimeout(cmp.Or(opts.Timeout, DefaultTimeout)).
		Filter(opts.Filter)

	var cov *cover.Cover
	if opts.Coverage {
		cov = cover.New()
		// The supplementary passes only tag why a line is not covered; the
		// report does not show that, so don't pay for them.
		runner = runner.SetCoverageQueryTracer(cov).SetCoverageRuns(nil)
	}

	ch, err := runner.RunTests(ctx, txn)
	if err != nil {
		var aerrs ast.Errors
		if errors.As(err, &aerrs) {
			return nil, newError(StageCompile, err)
		}
		return nil, fmt.Errorf("policytest: %w", err)
	}

	report := &Report{}
	for tr := range ch {
		report.Results = append(report.Results, convert(tr, opts.Trace, opts.VarValues))
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("policytest: tests did not finish: %w", err)
	}
	slices.SortFunc(report.Results, func(a, b Result) int {
		return cmp.Or(
			cmp.Compare(a.Location.File, b.Location.File),
			cmp.Compare(a.Location.Row, b.Location.Row),
			cmp.Compare(a.Package, b.Package),
			cmp.Compare(a.Name, b.Name),
		)
	})

	if cov != nil {
		report.Coverage = coverage(cov.Report(modules))
	}
	return report, nil
}

// load reads the files of paths as regoload finds them, tests included:
// below a directory, names beginning with "." are skipped; a file named
// explicitly is read whatever its name. Every file that cannot be read is
// reported, as an [*Error] of StageLoad.
func load(paths []string) ([]regoload.File, error) {
	var (
		files []regoload.File
		ds    []Diagnostic
		errs  []error
	)
	fail := func(err error) {
		errs = append(errs, err)
		if l := diag.From(err); l != nil {
			for _, d := range l {
				ds = append(ds, diagnosticOf(d))
			}
			return
		}
		ds = append(ds, Diagnostic{Message: err.Error()})
	}
	for _, p := range paths {
		st, err := os.Stat(p)
		switch {
		case err != nil:
			fail(err)
		case st.IsDir():
			fs, err := regoload.Walk(nil, p, regoload.WalkOptions{Tests: true})
			if err != nil {
				fail(err)
				continue
			}
			files = append(files, fs...)
		default:
			f, err := regoload.ReadNamed(p)
			if err != nil {
				fail(err)
				continue
			}
			files = append(files, f)
		}
	}
	if len(ds) > 0 {
		return nil, &Error{Stage: StageLoad, Diagnostics: ds, Err: errors.Join(errs...)}
	}
	return files, nil
}

// IsTestFile reports whether the file named name holds tests rather than
// policy: its base name ends in _test.rego.
func IsTestFile(name string) bool {
	return strings.HasSuffix(name, "_test.rego")
}

func convert(tr *tester.Result, withTrace, varValues bool) Result {
	r := Result{
		Package:  tr.Package,
		Name:     tr.Name,
		Duration: tr.Duration,
		Location: location(tr.Location),
		Output:   string(tr.Output),
	}
	switch {
	case tr.Skip:
		r.Status = StatusSkip
	case tr.Error != nil:
		r.Status = StatusError
		r.Error = tr.Error.Error()
	case tr.Fail:
		r.Status = StatusFail
	default:
		r.Status = StatusPass
	}
	for path, sr := range tr.SubResults.Iter {
		if len(sr.SubResults) == 0 {
			r.Cases = append(r.Cases, Case{Path: slices.Clone(path), Fail: sr.Fail})
		}
	}
	if withTrace && r.Status != StatusPass && r.Status != StatusSkip && len(tr.Trace) > 0 {
		var buf bytes.Buffer
		topdown.PrettyTraceWithOpts(&buf, tr.Trace, topdown.PrettyTraceOptions{Locations: true})
		r.Trace = buf.String()
		r.FailedAt = failedAt(tr.Trace)
	}
	if varValues && r.Status == StatusFail && len(tr.Trace) > 0 {
		r.VarValues = failedExpr(tr.Trace)
	}
	return r
}

// failedExpr renders the expression a failing test stopped at with the
// values of its variables, as `opa test --var-values` prints it: the
// expression's location, the expression, and one line per variable under
// it. Empty when the trace has no such expression.
func failedExpr(trace []*topdown.Event) string {
	e := failedEvent(trace)
	if e == nil {
		return ""
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "%s:%d:\n", e.Location.File, e.Location.Row)
	var expr bytes.Buffer
	if err := topdown.PrettyEvent(&expr, e, topdown.PrettyEventOpts{PrettyVars: true}); err != nil {
		return ""
	}
	for _, l := range strings.Split(strings.TrimRight(expr.String(), "\n"), "\n") {
		buf.WriteString("  " + l + "\n")
	}
	return buf.String()
}

// failedAt finds the last expression of the test's own evaluation that
// failed, as `opa test --var-values` does.
func failedAt(trace []*topdown.Event) *Location {
	if e := failedEvent(trace); e != nil {
		loc := location(e.Location)
		return &loc
	}
	return nil
}

// failedEvent is the event of the last expression of the test's own
// evaluation that failed, or nil.
func failedEvent(trace []*topdown.Event) *topdown.Event {
	for _, e := range slices.Backward(trace) {
		if e.Op != topdown.FailOp || e.Location == nil || e.QueryID == 0 {
			continue
		}
		if expr, ok := e.Node.(*ast.Expr); ok {
			if _, isEvery := expr.Terms.(*ast.Every); isEvery {
				continue // the failing expression is inside the every body
			}
		}
		return e
	}
	return nil
}

func coverage(rep cover.Report) *Coverage {
	files := make([]FileCoverage, 0, len(rep.Files))
	for name, fr := range rep.Files {
		if IsTestFile(name) {
			continue
		}
		fc := FileCoverage{
			File:            name,
			CoveredLines:    fr.CoveredLines,
			NotCoveredLines: fr.NotCoveredLines,
			Percent:         percent(fr.CoveredLines, fr.NotCoveredLines),
		}
		for _, rng := range fr.NotCovered {
			fc.NotCovered = append(fc.NotCovered, LineRange{Start: rng.Start.Row, End: rng.End.Row})
		}
		fc.NotCovered = mergeLines(fc.NotCovered)
		files = append(files, fc)
	}
	slices.SortFunc(files, func(a, b FileCoverage) int { return cmp.Compare(a.File, b.File) })
	return summarize(files)
}

// mergeLines merges overlapping and adjacent line ranges: coverage ranges are
// per expression, several may share a line.
func mergeLines(rs []LineRange) []LineRange {
	slices.SortFunc(rs, func(a, b LineRange) int { return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(a.End, b.End)) })
	var out []LineRange
	for _, r := range rs {
		if n := len(out); n > 0 && r.Start <= out[n-1].End+1 {
			out[n-1].End = max(out[n-1].End, r.End)
			continue
		}
		out = append(out, r)
	}
	return out
}
