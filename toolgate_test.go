package toolgate_test

import (
	"context"
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/cli/policytest"
)

// minBundledCoverage is the coverage of rego/ the bundled tests must keep.
const minBundledCoverage = 90.0

// TestBundledRegoPolicies makes the Rego unit tests of the bundled policies
// part of `go test ./...`; they also pass under `opa test rego policy-tests`.
func TestBundledRegoPolicies(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	report, err := policytest.Run(ctx, policytest.Options{
		Paths:    []string{toolgate.BundledPolicyDir, "policy-tests"},
		Coverage: true,
	})
	if err != nil {
		t.Fatalf("running the Rego tests: %v", err)
	}
	if len(report.Results) == 0 {
		t.Fatal("no Rego tests ran")
	}
	if !report.Passed() {
		var out strings.Builder
		_ = report.WritePretty(&out, false)
		for _, r := range report.Failed() {
			msg := fmt.Sprintf("%s: %s at %s", r.FullName(), strings.ToUpper(string(r.Status)), r.Location)
			if r.Error != "" {
				msg += ": " + r.Error
			}
			t.Error(msg)
		}
		t.Logf("opa test output:\n%s", out.String())
	}

	cov := report.Coverage.Under(toolgate.BundledPolicyDir)
	if len(cov.Files) == 0 {
		t.Fatalf("no coverage recorded for %s/", toolgate.BundledPolicyDir)
	}
	if cov.Percent < minBundledCoverage {
		for _, f := range cov.Files {
			t.Logf("%s: %.2f%%, not covered: %v", f.File, f.Percent, f.NotCovered)
		}
		t.Errorf("coverage of %s/ is %.2f%%, want at least %.0f%%", toolgate.BundledPolicyDir, cov.Percent, minBundledCoverage)
	}
}

// TestBundledFiles checks that the embedded example holds what
// `toolgate serve` serves by default, and nothing from the test directory.
func TestBundledFiles(t *testing.T) {
	t.Parallel()
	if len(toolgate.ExampleRegistry()) == 0 {
		t.Error("bundled registry is empty")
	}
	var policies []string
	err := fs.WalkDir(toolgate.ExamplePolicies(), ".", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			policies = append(policies, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"call.rego", "grant.rego", "limits.rego", "result.rego"}
	if strings.Join(policies, ",") != strings.Join(want, ",") {
		t.Errorf("bundled policies = %v, want %v", policies, want)
	}
}
