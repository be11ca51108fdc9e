package grantmode_test

import (
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/grantmode"
)

var granted = ast.MustParseRef("data.toolgate.grant.granted")

func compile(t *testing.T, modules map[string]string) *ast.Compiler {
	t.Helper()
	parsed := make(map[string]*ast.Module, len(modules))
	for name, src := range modules {
		m, err := ast.ParseModule(name, src)
		require.NoError(t, err)
		parsed[name] = m
	}
	// As the engine compiles: print statements stay in the policy.
	c := ast.NewCompiler().WithEnablePrintStatements(true)
	c.Compile(parsed)
	require.False(t, c.Failed(), "%v", c.Errors)
	return c
}

// TestAnalyse pins every message of the analysis byte for byte: the engine's
// DecisionMode and the explain goldens print them as they are.
func TestAnalyse(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		modules map[string]string
		want    grantmode.Mode
	}{
		{"no policy", nil, grantmode.Mode{Cacheable: true, Why: "no rule defines data.toolgate.grant.granted"}},
		{"no grant rule", map[string]string{"call.rego": "package toolgate.call\n\ndeny contains \"no\" if input.request.meta.x == 1\n"},
			grantmode.Mode{Cacheable: true, Why: "no rule defines data.toolgate.grant.granted"}},
		{"one rule", map[string]string{"grant.rego": "package toolgate.grant\n\ngranted := {\"echo\"} if \"admin\" in input.caller.roles\n"},
			grantmode.Mode{Cacheable: true, Rules: 1, Why: "the rule behind granted reads only input.caller, input.tools and data, and calls no non-deterministic built-in"}},
		{"a helper function and data", map[string]string{"grant.rego": "package toolgate.grant\n\ngranted := {t | some t in data.lists.allowed; ok(t)} if input.tools\n\nok(t) if startswith(t, \"r\")\n"},
			grantmode.Mode{Cacheable: true, Rules: 2, Why: "the 2 rules behind granted read only input.caller, input.tools and data, and call no non-deterministic built-in"}},
		{"print is allowed", map[string]string{"grant.rego": "package toolgate.grant\n\ngranted := {\"echo\"} if print(input.caller.subject)\n"},
			grantmode.Mode{Cacheable: true, Rules: 1, Why: "the rule behind granted reads only input.caller, input.tools and data, and calls no non-deterministic built-in"}},
		{"reads _meta", map[string]string{"grant.rego": "package toolgate.grant\n\ngranted := {\"echo\"} if {\n\tinput.request.meta[\"festi/echo\"] == true\n}\n"},
			grantmode.Mode{Rules: 1, Why: `reads input.request.meta["festi/echo"] at grant.rego:4`}},
		{"reads through another package and a function", map[string]string{
			"grant.rego":   "package toolgate.grant\n\nimport data.lib\n\ngranted := {\"echo\"} if lib.listing\n\ngranted := {\"x\"} if flag(\"x\")\n\nflag(k) if input.request.meta[k] == true\n",
			"lib/lib.rego": "package lib\n\nlisting if input.request.method == \"tools/list\"\n",
		}, grantmode.Mode{Rules: 4, Why: "reads input.request.method at lib/lib.rego:3; reads input.request.meta at grant.rego:9"}},
		{"the whole input", map[string]string{"grant.rego": "package toolgate.grant\n\ngranted := {\"echo\"} if count(input) > 3\n"},
			grantmode.Mode{Rules: 1, Why: "reads the whole input at grant.rego:3"}},
		{"a dynamic key", map[string]string{"grant.rego": "package toolgate.grant\n\ngranted := {\"echo\"} if {\n\tsome k\n\tinput[k].tool == \"x\"\n}\n"},
			grantmode.Mode{Rules: 1, Why: "reads input[__local0__], a key the analysis cannot resolve at grant.rego:5"}},
		{"time.now_ns twice, said once", map[string]string{"grant.rego": "package toolgate.grant\n\ngranted := {\"echo\"} if a\n\ngranted := {\"x\"} if b\n\na if time.now_ns() % 2 == 1\n\nb if rand.intn(\"x\", 2) == 1\n"},
			grantmode.Mode{Rules: 4, Why: "calls time.now_ns, a non-deterministic built-in at grant.rego:7; calls rand.intn, a non-deterministic built-in at grant.rego:9"}},
		{"with replaces a function by a built-in", map[string]string{"grant.rego": "package toolgate.grant\n\ngranted := {\"echo\"} if f(\"x\", 2) with f as rand.intn\n\nf(x, y) := 1\n"},
			grantmode.Mode{Rules: 2, Why: "calls rand.intn, a non-deterministic built-in at grant.rego:3"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, grantmode.Analyse(compile(t, tc.modules), granted))
		})
	}
}

func TestWalk(t *testing.T) {
	t.Parallel()
	c := compile(t, map[string]string{"grant.rego": `package toolgate.grant

granted := {"echo"} if {
	a
	print(b)
}

b := input.request.tool

a if c

c := count(input.caller.roles)
`})
	names := func(rules []*ast.Rule) []string {
		var out []string
		for _, r := range rules {
			out = append(out, r.Ref().GroundPrefix().String())
		}
		return out
	}

	// The closure, in the order reached, with what makes it depend on the call.
	all := grantmode.Walk(c, grantmode.RulesFor(c, granted), false)
	require.Equal(t, []string{"data.toolgate.grant.granted", "data.toolgate.grant.a", "data.toolgate.grant.b", "data.toolgate.grant.c"}, names(all.Rules))
	require.Equal(t, []string{"reads input.request.tool at grant.rego:8"}, all.Reasons)

	// A pure walk also refuses print.
	pure := grantmode.Walk(c, grantmode.RulesFor(c, ast.MustParseRef("data.toolgate.grant.a")), true)
	require.Equal(t, []string{"data.toolgate.grant.a", "data.toolgate.grant.c"}, names(pure.Rules))
	require.Empty(t, pure.Reasons)
	pure = grantmode.Walk(c, grantmode.RulesFor(c, granted), true)
	require.Equal(t, []string{"prints at grant.rego:5", "reads input.request.tool at grant.rego:8"}, pure.Reasons)

	// Nothing to walk is an empty closure.
	none := grantmode.Walk(c, grantmode.RulesFor(c, ast.MustParseRef("data.nothing")), true)
	require.Empty(t, none.Rules)
	require.Empty(t, none.Reasons)
}

// TestRulesForIsInSourceOrder: reasons come out in the same order whatever
// order the compiler keeps the rules in.
func TestRulesForIsInSourceOrder(t *testing.T) {
	t.Parallel()
	c := compile(t, map[string]string{
		"b.rego": "package toolgate.grant\n\ngranted contains \"b\" if input.request.x\n",
		"a.rego": "package toolgate.grant\n\ngranted contains \"a\" if input.request.y\n\ngranted contains \"c\" if input.request.z\n",
	})
	var locs []string
	for _, r := range grantmode.RulesFor(c, granted) {
		locs = append(locs, r.Location.String())
	}
	require.Equal(t, []string{"a.rego:3", "a.rego:5", "b.rego:3"}, locs)
	require.Equal(t, "reads input.request.y at a.rego:3; reads input.request.z at a.rego:5; reads input.request.x at b.rego:3",
		grantmode.Analyse(c, granted).Why)
}
