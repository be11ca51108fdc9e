package policytest_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/cli/policytest"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/pretty")

// writeFiles writes files (path → content) under a new temp dir and returns it.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// inDir is opts with its Paths (defaults when it has none) under dir.
func inDir(dir string, opts policytest.Options, defaults ...string) policytest.Options {
	paths := opts.Paths
	if len(paths) == 0 {
		paths = defaults
	}
	opts.Paths = nil
	for _, p := range paths {
		opts.Paths = append(opts.Paths, filepath.Join(dir, p))
	}
	return opts
}

const policy = `package authz

allow if input.role == "admin"

allow if {
	input.role == "auditor"
	input.method == "GET"
}
`

type want struct {
	status policytest.Status
	row    int // the test's line in its file
}

func TestRun(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		about   string // first line of the golden file
		verbose bool   // print the golden file verbose
		files   map[string]string
		opts    policytest.Options // Paths are relative to the temp dir
		passed  bool
		results map[string]want // by test name
		// check inspects the report further.
		check func(t *testing.T, dir string, r *policytest.Report)
	}{
		{
			name:    "pass verbose",
			about:   "verbose output lists passing tests too, each under its file and line",
			verbose: true,
			files: map[string]string{
				"rego/authz.rego": policy,
				"tests/authz_test.rego": `package authz_test

import data.authz

test_admin if authz.allow with input as {"role": "admin"}

test_guest if not authz.allow with input as {"role": "guest"}
`,
			},
			passed: true,
			results: map[string]want{
				"test_admin": {policytest.StatusPass, 5},
				"test_guest": {policytest.StatusPass, 7},
			},
		},
		{
			name:  "fail",
			about: "a failing test is listed with its file and line and counted as FAIL",
			files: map[string]string{
				"rego/authz.rego": policy,
				"tests/authz_test.rego": `package authz_test

import data.authz

test_admin if authz.allow with input as {"role": "admin"}

test_auditor_post if {
	print("role auditor, method POST")
	authz.allow with input as {"role": "auditor", "method": "POST"}
}
`,
			},
			passed: false,
			results: map[string]want{
				"test_admin":        {policytest.StatusPass, 5},
				"test_auditor_post": {policytest.StatusFail, 7},
			},
			check: func(t *testing.T, _ string, r *policytest.Report) {
				f := r.Failed()
				if len(f) != 1 || f[0].Output != "role auditor, method POST\n" {
					t.Errorf("Failed() = %+v, want test_auditor_post with its print output", f)
				}
			},
		},
		{
			name:  "error",
			about: "a test whose evaluation fails is an ERROR with the evaluation error",
			files: map[string]string{
				"rego/conflict.rego": `package conflict

p := 1 if input.x

p := 2 if input.x
`,
				"tests/conflict_test.rego": `package conflict_test

import data.conflict

test_conflict if conflict.p == 1 with input as {"x": true}
`,
			},
			passed: false,
			results: map[string]want{
				"test_conflict": {policytest.StatusError, 5},
			},
			check: func(t *testing.T, _ string, r *policytest.Report) {
				if e := r.Results[0].Error; !strings.Contains(e, "eval_conflict_error") {
					t.Errorf("Error = %q, want an eval_conflict_error", e)
				}
			},
		},
		{
			name:  "skip",
			about: "todo_test_ rules are SKIPPED and do not fail the report",
			files: map[string]string{
				"authz.rego": policy,
				"authz_test.rego": `package authz_test

test_ok if true

todo_test_later if false
`,
			},
			opts:   policytest.Options{Paths: []string{"."}},
			passed: true,
			results: map[string]want{
				"test_ok":         {policytest.StatusPass, 3},
				"todo_test_later": {policytest.StatusSkip, 5},
			},
		},
		{
			name:    "cases",
			about:   "a test with cases counts each case; verbose output lists every case",
			verbose: true,
			files: map[string]string{
				"rego/authz.rego": policy,
				"tests/authz_test.rego": `package authz_test

import data.authz

test_allowed[role] if {
	some role in ["admin", "guest"]
	authz.allow with input as {"role": role}
}
`,
			},
			passed: false,
			results: map[string]want{
				`test_allowed`: {policytest.StatusFail, 5},
			},
			check: func(t *testing.T, _ string, r *policytest.Report) {
				pass, fail, _, _ := r.Counts()
				if pass != 1 || fail != 1 {
					t.Errorf("Counts() pass=%d fail=%d, want 1 and 1", pass, fail)
				}
			},
		},
		{
			name:  "coverage",
			about: "coverage counts policy files only, with the lines no test reached",
			files: map[string]string{
				"rego/authz.rego": policy,
				"tests/authz_test.rego": `package authz_test

import data.authz

test_admin if authz.allow with input as {"role": "admin"}
`,
			},
			opts:   policytest.Options{Coverage: true},
			passed: true,
			results: map[string]want{
				"test_admin": {policytest.StatusPass, 5},
			},
			check: func(t *testing.T, dir string, r *policytest.Report) {
				c := r.Coverage
				if c == nil || len(c.Files) != 1 {
					t.Fatalf("Coverage = %+v, want one file", c)
				}
				f := c.Files[0]
				if f.File != filepath.Join(dir, "rego", "authz.rego") {
					t.Errorf("coverage file = %q", f.File)
				}
				// Lines 3 (covered), 5-7 (never reached: rule indexing
				// rules out the auditor rule for role admin).
				if f.CoveredLines != 1 || f.NotCoveredLines != 3 || c.Percent != 25 {
					t.Errorf("coverage = %d covered, %d not, %.2f%%; want 1, 3, 25%%", f.CoveredLines, f.NotCoveredLines, c.Percent)
				}
				if got := c.Under(filepath.Join(dir, "rego")).Percent; got != 25 {
					t.Errorf("Under(rego).Percent = %.2f, want 25", got)
				}
				if got := len(c.Under(filepath.Join(dir, "tests")).Files); got != 0 {
					t.Errorf("Under(tests) has %d files, want 0", got)
				}
			},
		},
		{
			name:  "filter",
			about: "Filter runs only the tests whose reference matches",
			files: map[string]string{
				"t_test.rego": `package t_test

test_one if true

test_two if false
`,
			},
			opts:   policytest.Options{Paths: []string{"."}, Filter: `t_test\.test_one$`},
			passed: true,
			results: map[string]want{
				"test_one": {policytest.StatusPass, 3},
			},
		},
		{
			name:  "data and hidden files",
			about: "data.json loads under its directory's path; dot files and other documents are skipped",
			files: map[string]string{
				"policies/roles/data.json":       `{"admins": ["alice"]}`,
				"policies/roles/other.json":      `{"admins": ["mallory"]}`,
				"policies/..2026_11_30/bad.rego": `this does not parse`,
				"policies/.hidden.rego":          `neither does this`,
				"policies/authz.rego":            "package authz\n\nallow if input.subject in data.roles.admins\n",
				"policies/tests/authz_test.rego": "package authz_test\n\nimport data.authz\n\ntest_alice if authz.allow with input as {\"subject\": \"alice\"}\n\ntest_mallory if not authz.allow with input as {\"subject\": \"mallory\"}\n",
				"policies/tests/notes.yaml":      "not: [loaded",
				"policies/tests/README.md":       "# not loaded",
			},
			opts:   policytest.Options{Paths: []string{"policies"}},
			passed: true,
			results: map[string]want{
				"test_alice":   {policytest.StatusPass, 5},
				"test_mallory": {policytest.StatusPass, 7},
			},
		},
		{
			name:  "trace",
			about: "with Trace a failing test names the expression that failed",
			files: map[string]string{
				"t_test.rego": `package t_test

test_math if {
	x := 1 + 1
	x == 3
}
`,
			},
			opts:   policytest.Options{Paths: []string{"."}, Trace: true},
			passed: false,
			results: map[string]want{
				"test_math": {policytest.StatusFail, 3},
			},
			check: func(t *testing.T, _ string, r *policytest.Report) {
				res := r.Results[0]
				if res.FailedAt == nil || res.FailedAt.Row != 5 {
					t.Errorf("FailedAt = %v, want line 5", res.FailedAt)
				}
				if !strings.Contains(res.Trace, "t_test.rego:5") || !strings.Contains(res.Trace, "Fail x = 3") {
					t.Errorf("Trace does not show the failing expression:\n%s", res.Trace)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := writeFiles(t, tt.files)
			opts := inDir(dir, tt.opts, "rego", "tests")

			report, err := policytest.Run(context.Background(), opts)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if got := report.Passed(); got != tt.passed {
				t.Errorf("Passed() = %v, want %v", got, tt.passed)
			}
			if len(report.Results) != len(tt.results) {
				t.Errorf("got %d results, want %d: %+v", len(report.Results), len(tt.results), report.Results)
			}
			for _, res := range report.Results {
				w, ok := tt.results[res.Name]
				if !ok {
					t.Errorf("unexpected test %s", res.FullName())
					continue
				}
				if res.Status != w.status || res.Location.Row != w.row {
					t.Errorf("%s: status %s at line %d, want %s at line %d (error %q)", res.Name, res.Status, res.Location.Row, w.status, w.row, res.Error)
				}
			}
			if tt.check != nil {
				tt.check(t, dir, report)
			}
			checkGolden(t, tt.name, tt.about, tt.verbose, dir, report)
		})
	}
}

// checkGolden compares the pretty output, durations hidden and the temp dir
// written as $DIR, with testdata/pretty/<name>.golden.
func checkGolden(t *testing.T, name, about string, verbose bool, dir string, r *policytest.Report) {
	t.Helper()
	relativize(r, dir)
	var buf bytes.Buffer
	buf.WriteString("# " + about + "\n")
	if err := r.WritePrettyOpts(&buf, policytest.PrettyOptions{Verbose: verbose, HideDurations: true}); err != nil {
		t.Fatal(err)
	}
	got := strings.ReplaceAll(buf.String(), dir, "$DIR")
	path := filepath.Join("testdata", "pretty", strings.ReplaceAll(name, " ", "_")+".golden")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("pretty output differs from %s:\n--- got\n%s--- want\n%s", path, got, want)
	}
}

func TestRunErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		files map[string]string
		opts  policytest.Options
		stage policytest.Stage
		// diags are the wanted diagnostics as "file:row code", file relative.
		diags []string
	}{
		{
			name: "parse error",
			files: map[string]string{
				"ok.rego":     "package ok\n\np := 1\n",
				"broken.rego": "package broken\n\np := 1\n\nq if {\n\tinput.x ==\n}\n",
				"also.rego":   "package also\n\nr if {\n",
			},
			stage: policytest.StageLoad,
			// The parser places an unexpected end of file after the last line.
			diags: []string{"also.rego:4 rego_parse_error", "broken.rego:7 rego_parse_error"},
		},
		{
			name: "compile error",
			files: map[string]string{
				"unsafe.rego": "package unsafe\n\np if {\n\tx > 1\n}\n",
				"t_test.rego": "package t_test\n\ntest_q if {\n\ty == 1\n\tz == 2\n}\n",
			},
			stage: policytest.StageCompile,
			diags: []string{"t_test.rego:4 rego_unsafe_var_error", "t_test.rego:5 rego_unsafe_var_error", "unsafe.rego:4 rego_unsafe_var_error"},
		},
		{
			name:  "missing path",
			files: map[string]string{},
			opts:  policytest.Options{Paths: []string{"nowhere"}},
			stage: policytest.StageLoad,
			diags: []string{":0 "},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := writeFiles(t, tt.files)
			opts := inDir(dir, tt.opts, ".")

			report, err := policytest.Run(context.Background(), opts)
			if report != nil {
				t.Errorf("Run returned a report with an error: %+v", report)
			}
			var perr *policytest.Error
			if !errors.As(err, &perr) {
				t.Fatalf("Run error = %v, want a *policytest.Error", err)
			}
			if perr.Stage != tt.stage {
				t.Errorf("Stage = %s, want %s", perr.Stage, tt.stage)
			}
			var got []string
			for _, d := range perr.Diagnostics {
				file := strings.TrimPrefix(strings.TrimPrefix(d.Location.File, dir), string(filepath.Separator))
				got = append(got, file+":"+strconv.Itoa(d.Location.Row)+" "+d.Code)
			}
			slices.Sort(got)
			if strings.Join(got, "\n") != strings.Join(tt.diags, "\n") {
				t.Errorf("diagnostics:\n%s\nwant:\n%s\nerror: %v", strings.Join(got, "\n"), strings.Join(tt.diags, "\n"), err)
			}
			// The message names every position, for people reading logs.
			for _, d := range perr.Diagnostics {
				if !strings.Contains(err.Error(), d.String()) {
					t.Errorf("Error() does not contain %q:\n%v", d, err)
				}
			}
		})
	}
}

func TestRunInvalidOptions(t *testing.T) {
	t.Parallel()
	if _, err := policytest.Run(context.Background(), policytest.Options{}); err == nil {
		t.Error("Run without paths: no error")
	}
	dir := writeFiles(t, map[string]string{"t_test.rego": "package t_test\n\ntest_x if true\n"})
	if _, err := policytest.Run(context.Background(), policytest.Options{Paths: []string{dir}, Filter: "("}); err == nil {
		t.Error("Run with an invalid filter: no error")
	}
}

func TestRunCanceled(t *testing.T) {
	t.Parallel()
	dir := writeFiles(t, map[string]string{"t_test.rego": "package t_test\n\ntest_x if true\n"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := policytest.Run(ctx, policytest.Options{Paths: []string{dir}}); !errors.Is(err, context.Canceled) {
		t.Errorf("Run with a canceled context = %v, want context.Canceled", err)
	}
}

// relativize rewrites the temp dir in r's file names as $DIR, so that the
// coverage table aligns the same whatever the temp dir is called.
func relativize(r *policytest.Report, dir string) {
	for i := range r.Results {
		res := &r.Results[i]
		res.Location.File = strings.ReplaceAll(res.Location.File, dir, "$DIR")
		res.Error = strings.ReplaceAll(res.Error, dir, "$DIR")
		if res.FailedAt != nil {
			res.FailedAt.File = strings.ReplaceAll(res.FailedAt.File, dir, "$DIR")
		}
	}
	if r.Coverage != nil {
		for i := range r.Coverage.Files {
			r.Coverage.Files[i].File = strings.ReplaceAll(r.Coverage.Files[i].File, dir, "$DIR")
		}
	}
}
