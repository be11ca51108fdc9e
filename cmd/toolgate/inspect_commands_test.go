package main

import (
	"testing"
)

// The golden tests swap builtinMethods and change directory, so they run
// sequentially: top-level tests that call t.Parallel start only once every
// sequential one has finished.

func TestCheckGolden(t *testing.T) {
	saved := builtinMethods
	builtinMethods = specMethods
	t.Cleanup(func() { builtinMethods = saved })

	const shop = "testdata/shop"
	for _, c := range []goldenCase{
		{"check_bundled", "the bundled example checks clean against the demo methods", []string{"check"}},
		{"check_reach", "every problem of the shop fixture, reach measured for every combination of the sections' roles",
			[]string{"check", "--registry", shop + "/registry.yaml", "--policy", shop + "/rego"}},
		{"check_roles", "--roles: each value one combination; \"\" is a caller without roles",
			[]string{"check", "--registry", shop + "/registry.yaml", "--policy", shop + "/rego", "--roles", "agent", "--roles", ""}},
		{"check_callers_json", "--callers and --format json: a granted unknown name, a failing grant decision, an undecided URL driver",
			[]string{"check", "--registry", shop + "/registry.yaml", "--policy", shop + "/rego", "--callers", shop + "/callers.yaml", "--format", "json"}},
		{"check_broken", "an invalid registry and policies that do not compile: every problem of both is listed",
			[]string{"check", "--registry", "testdata/broken/registry.yaml", "--policy", "testdata/broken/rego"}},
		{"check_missing", "a registry that cannot be read is an error, not a crash",
			[]string{"check", "--registry", "testdata/nothing.yaml", "--policy", shop + "/rego"}},
		{"check_registry_only", "--registry without --policy checks that registry against the bundled policies",
			[]string{"check", "--registry", shop + "/registry.yaml"}},
		{"check_config_credentials", "--config: credentials written as literals are warnings naming the setting, never its value; an auth on a stdio upstream is an error (docs/contract.md §17)",
			[]string{"check", "--config", "testdata/credentials/serve.yaml", "--registry", shop + "/registry.yaml", "--policy", shop + "/rego", "--roles", "agent"}},
		{"check_usage", "an unknown flag is a usage error (exit 2)",
			[]string{"check", "--bogus"}},
	} {
		t.Run(c.name, func(t *testing.T) { runGolden(t, c) })
	}
}

func TestExplainGolden(t *testing.T) {
	shop := []string{"--registry", "testdata/shop/registry.yaml", "--policy", "testdata/shop/rego"}
	with := func(args ...string) []string { return append(append([]string{"explain"}, shop...), args...) }
	// Access tokens of a fixed key (ES256, kid acme-1), issued for the
	// default resource; alice.jwt expires in 2100.
	const idp, issuer = "testdata/identity", "https://login.example.com/realms/acme"
	for _, c := range []goldenCase{
		{"explain_nobody", "nobody: no tool, and a call gets Unknown tool", with("--tool", "echo")},
		{"explain_base_run", "no override: the base decision per row; a granted call would run its method",
			with("--as", "alice", "--role", "agent", "--tool", "getReward", "--args", `{"idReward": 7}`)},
		{"explain_base_hidden", "a hidden tool gets exactly the unknown-name answer, decided by the base decision",
			with("--as", "alice", "--role", "agent", "--tool", "report")},
		{"explain_no_row", "a name no row has: Unknown tool, no row",
			with("--as", "alice", "--role", "agent", "--tool", "nosuch")},
		{"explain_override", "an override: the rule (file:line) that defined granted, and a granted name no row has",
			with("--as", "carol", "--role", "contractor", "--tool", "getReward")},
		{"explain_denied", "every deny reason, joined by '; ', with the rule of each",
			with("--as", "ann", "--role", "admin", "--tool", "resetCounter", "--meta", `{"festi/day": "sunday"}`)},
		{"explain_answered", "a toolgate.call result answers the call instead of the method",
			with("--as", "ann", "--role", "admin", "--tool", "quota")},
		{"explain_failed", "a grant decision that fails: access could not be verified, listing falls back",
			with("--as", "cid", "--role", "conflict", "--tool", "echo")},
		{"explain_json", "--format json: the same explanation for scripts",
			with("--as", "ann", "--role", "admin", "--tool", "resetCounter", "--format", "json")},
		{"explain_usage", "--role without --as is a usage error (exit 2)", with("--role", "admin")},
		{"explain_token", "--token: the caller a verified access token maps to (roles from realm_access.roles), then the explanation",
			with("--token", idp+"/alice.jwt", "--issuer", issuer, "--jwks", idp+"/jwks.json", "--roles-claim", "realm_access.roles",
				"--tool", "getReward", "--args", `{"idReward": 7}`)},
		{"explain_token_wrong_claim", "--token with the default roles claim, which this issuer does not fill: no role, so the tool is hidden",
			with("--token", idp+"/alice.jwt", "--issuer", issuer, "--jwks", idp+"/jwks.json", "--tool", "getReward")},
		{"explain_token_expired", "--token: a token the server refuses is exit 1 with the reason the server only logs",
			with("--token", idp+"/expired.jwt", "--issuer", issuer, "--jwks", idp+"/jwks.json")},
		{"explain_token_audience", "--token: a token for another resource is refused; --resource names this server's",
			with("--token", idp+"/other-audience.jwt", "--issuer", issuer, "--jwks", idp+"/jwks.json", "--resource", "https://tools.example.com/mcp")},
		{"explain_token_no_issuer", "--token needs --issuer (exit 2)", with("--token", idp+"/alice.jwt")},
		{"explain_token_http", "--token: the default --resource follows --http, so a token issued for 127.0.0.1:8787 is refused by a server at another address",
			with("--token", idp+"/alice.jwt", "--issuer", issuer, "--jwks", idp+"/jwks.json", "--http", "127.0.0.1:9999")},
		{"explain_input_call", "--input: the exact input document of a tools/call, with the resolved row as tool and the bounded _meta",
			with("--as", "alice", "--role", "agent", "--tool", "getReward", "--args", `{"idReward": 7, "n": 1.50}`, "--meta", `{"festi/runId": "r-1", "deep": {"a": {"b": {"c": {"d": 1}}}}}`, "--input")},
		{"explain_input_list", "--input without --tool: a tools/list's input document; nobody is a null caller",
			with("--input")},
		{"explain_input_no_row", "--input for a name no row has: the request names it, there is no tool",
			with("--as", "alice", "--tool", "nosuch", "--input")},
		{"explain_input_unrepresentable", "--input of arguments a policy could not see exactly: no document, exit 1, no argument value printed",
			with("--as", "alice", "--tool", "echo", "--args", `{"a": 1e100000, "a": 2}`, "--input")},
		{"explain_claims", "--claims without --as: a token's claims, read as the server reads them (roles from --roles-claim)",
			with("--claims", `{"sub": "bea", "groups": "agent auditors", "n": 1.50}`, "--roles-claim", "groups", "--tool", "getReward")},
		{"explain_claims_no_subject", "--claims without a subject claim is no caller (exit 1)",
			with("--claims", `{"email": "bea@example.com"}`)},
		{"explain_bad_policy", "policies that do not load: exit 1, pointing at check",
			[]string{"explain", "--registry", "testdata/broken/registry.yaml", "--policy", "testdata/broken/rego", "--as", "x"}},
	} {
		t.Run(c.name, func(t *testing.T) { runGolden(t, c) })
	}
}

func TestTestGolden(t *testing.T) {
	const dir = "testdata/policytests"
	for _, c := range []goldenCase{
		{"test_pass", "passing tests print only the counts", []string{"test", dir + "/pass"}},
		{"test_verbose", "-v lists every test", []string{"test", "-v", dir + "/pass"}},
		{"test_coverage", "--coverage prints the coverage of the policy files", []string{"test", "--coverage", dir + "/pass"}},
		{"test_run", "--run filters tests by reference", []string{"test", "--run", "others", "-v", dir + "/pass"}},
		{"test_fail", "a failing test is listed and exits 1", []string{"test", dir + "/fail"}},
		{"test_var_values", "--var-values: a failing test's expression with the values of its variables, as opa test --var-values", []string{"test", "--var-values", dir + "/fail"}},
		{"test_no_tests", "a path that holds no tests fails (exit 1), as opa test --fail-on-empty", []string{"test", dir + "/notests"}},
		{"test_run_matches_none", "a --run filter that matches no test fails too", []string{"test", "--run", "nosuch", dir + "/pass"}},
		{"test_bad", "a test file that does not parse: every diagnostic, exit 1", []string{"test", dir + "/bad"}},
		{"test_usage", "an unknown flag is a usage error (exit 2)", []string{"test", "--nope"}},
	} {
		t.Run(c.name, func(t *testing.T) { runGolden(t, c) })
	}
	t.Run("test_defaults", func(t *testing.T) {
		t.Chdir(dir + "/defaults")
		runGolden(t, goldenCase{"test_defaults", "without DIR: rego and policy-tests of the working directory", []string{"test", "-v"}})
	})
	t.Run("explain_defaults", func(t *testing.T) {
		t.Chdir(dir + "/defaults")
		runGolden(t, goldenCase{"explain_defaults", "without --policy, explain reads rego/ of the working directory, as test does; the registry is the bundled one, labelled so",
			[]string{"explain", "--as", "cid", "--role", "contractor", "--tool", "add"}})
	})
	t.Run("check_defaults", func(t *testing.T) {
		t.Chdir(dir + "/defaults")
		runGolden(t, goldenCase{"check_defaults", "without --policy, check reads rego/ of the working directory, as test does", []string{"check"}})
	})
	t.Run("test_no_defaults", func(t *testing.T) {
		t.Chdir(dir)
		runGolden(t, goldenCase{"test_no_defaults", "without DIR and without rego/ or policy-tests/ here: a usage error", []string{"test"}})
	})
}
