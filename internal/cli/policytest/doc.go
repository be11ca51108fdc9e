// Package policytest runs Rego unit tests from Go the way `opa test` does:
// every rule whose name starts with `test_` in the loaded modules is
// evaluated, a rule named `todo_test_...` is skipped, and coverage is traced
// on request.
//
// It backs `go test` of toolgate's bundled policies and the `toolgate test`
// command:
//
//	report, err := policytest.Run(ctx, policytest.Options{
//		Paths:    []string{"rego", "policy-tests"},
//		Coverage: true,
//	})
//	if err != nil {
//		// nothing ran: a file did not parse or the modules did not compile;
//		// errors.As(err, new(*policytest.Error)) gives every diagnostic.
//	}
//	_ = report.WritePretty(os.Stdout, false)
//	if !report.Passed() { ... }
//
// A [Report] holds only plain values (no OPA types), sorted by file and line,
// so it is deterministic apart from durations, which [PrettyOptions] can hide.
// Run is safe for concurrent use; a Report is not modified after Run returns.
package policytest
