package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/toolgate/toolgate/internal/cli/policytest"
)

func init() {
	register(command{name: "test", summary: "run the Rego unit tests of the policies, like opa test", run: runTestCommand})
}

// defaultTestDirs are tested when no directory is named, those of them that
// exist in the working directory: the policies check and explain read by
// default too (defaultPolicyDir), and their tests.
var defaultTestDirs = []string{defaultPolicyDir, "policy-tests"}

// testParams is `toolgate test`: what to run and where to write.
type testParams struct {
	paths    []string
	coverage bool
	verbose  bool
	vars     bool
	filter   string
	timeout  time.Duration
	caps     capabilitiesFlag
}

func runTestCommand(ctx context.Context, e *env) int {
	var p testParams
	fs := newFlags("test", "test [--coverage] [-v] [--var-values] [--run REGEX] [--timeout D] [--capabilities FILE] [DIR|BUNDLE ...]", e.stderr)
	fs.BoolVar(&p.coverage, "coverage", false, "print the coverage of the policy files")
	fs.BoolVar(&p.verbose, "v", false, "list every test, not only those that did not pass")
	fs.BoolVar(&p.vars, "var-values", false, "for each failing test, show the expression it failed at with the values of its variables (as opa test --var-values)")
	fs.StringVar(&p.filter, "run", "", "run only the tests whose reference matches `REGEX`")
	p.caps.register(fs)
	fs.DurationVar(&p.timeout, "timeout", 0, "the time one test may take (default 5s)")
	if done, code := parseFlags(fs, e.args); done {
		return code
	}
	p.paths = fs.Args()
	if len(p.paths) == 0 {
		for _, d := range defaultTestDirs {
			if st, err := os.Stat(d); err == nil && st.IsDir() {
				p.paths = append(p.paths, d)
			}
		}
		if len(p.paths) == 0 {
			return usageError(fs, e.stderr, "no rego/ or policy-tests/ directory here: name the directories to test")
		}
	}
	return p.run(ctx, e)
}

// run runs the tests: exit 0 when all pass, 1 when one fails or errors or
// the files do not load or compile.
func (p *testParams) run(ctx context.Context, e *env) int {
	caps, err := p.caps.loadOPA()
	if err != nil {
		fmt.Fprintf(e.stderr, "toolgate test: %v\n", err)
		return 1
	}
	paths, cleanup, err := unpackBundles(p.paths) // a bundle file is tested too (cmd/toolgate/bundle.go)
	if err != nil {
		fmt.Fprintf(e.stderr, "toolgate test: %v\n", err)
		return 1
	}
	defer cleanup()
	rep, err := policytest.Run(ctx, policytest.Options{Paths: paths, Coverage: p.coverage, VarValues: p.vars, Filter: p.filter, Timeout: p.timeout, Capabilities: caps})
	if err != nil {
		var pe *policytest.Error
		if errors.As(err, &pe) {
			fmt.Fprintf(e.stderr, "toolgate test: %s failed with %d error(s):\n", pe.Stage, len(pe.Diagnostics))
			for _, d := range pe.Diagnostics {
				fmt.Fprintf(e.stderr, "  %s\n", d)
			}
		} else {
			fmt.Fprintf(e.stderr, "toolgate test: %v\n", err)
		}
		return 1
	}
	if err := rep.WritePrettyOpts(e.stdout, policytest.PrettyOptions{Verbose: p.verbose}); err != nil {
		fmt.Fprintf(e.stderr, "toolgate test: %v\n", err)
		return 1
	}
	if !rep.Passed() {
		return 1
	}
	if len(rep.Results) == 0 {
		// As opa test --fail-on-empty: a path without tests is a mistake
		// (a wrong directory, a filter that matches nothing), not a pass.
		fmt.Fprintf(e.stderr, "toolgate test: no tests were run in %s\n", strings.Join(p.paths, ", "))
		return 1
	}
	return 0
}
