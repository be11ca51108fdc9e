package policytest_test

import (
	"context"
	"fmt"
	"os"

	"github.com/toolgate/toolgate/internal/cli/policytest"
)

func ExampleRun() {
	report, err := policytest.Run(context.Background(), policytest.Options{
		Paths:    []string{"testdata/example"},
		Coverage: true,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = report.WritePrettyOpts(os.Stdout, policytest.PrettyOptions{Verbose: true, HideDurations: true})
	fmt.Println("passed:", report.Passed())
	// Output:
	// testdata/example/policy_test.rego:5:
	// data.example_test.test_admin_allowed: PASS
	// testdata/example/policy_test.rego:7:
	// data.example_test.test_guest_refused: PASS
	// --------------------------------------------------------------------------------
	// PASS: 2/2
	// Coverage:
	//   testdata/example/policy.rego   50.00%  1/2 lines  not covered: 5
	//   total                          50.00%  1/2 lines
	// passed: true
}
