package main

import "testing"

// TestExplainLimitsGolden: explain shows a call's rate limits with their
// counters (--ledger, read and never counted in) and what the result
// rules make of a result (--result), docs/contract.md §18, with the bundled
// example's policies.
func TestExplainLimitsGolden(t *testing.T) {
	bundled := []string{"explain", "--registry", "../../example/registry.yaml", "--policy", "../../rego", "--as", "ann", "--role", "manager"}
	with := func(args ...string) []string { return append(append([]string{}, bundled...), args...) }
	for _, c := range []goldenCase{
		{"explain_limits", "--ledger: the call's limits with their counters; the store is read, never counted in",
			with("--tool", "sleep", "--args", `{"ms": 5}`, "--ledger", "memory")},
		{"explain_limits_unread", "without --ledger the limits are listed, their counters not read",
			with("--tool", "sleep", "--args", `{"ms": 5}`)},
		{"explain_result_redacted", "--result: what the caller would get once the result rules redact it",
			with("--tool", "echo", "--args", `{"text": "x"}`, "--result", `{"content": [{"type": "text", "text": "key AKIAIOSFODNN7EXAMPLE"}]}`)},
		{"explain_result_withheld", "--result: a result a deny rule withholds, with its reasons",
			with("--tool", "echo", "--args", `{"text": "x"}`, "--result", `{"content": [{"type": "text", "text": "-----BEGIN PRIVATE KEY-----"}]}`)},
		{"explain_result_usage", "--result that is not exactly a CallToolResult is a usage error (exit 2)",
			with("--tool", "echo", "--result", `{"content": [], "isErr": true}`)},
	} {
		t.Run(c.name, func(t *testing.T) { runGolden(t, c) })
	}
}
