package inspect

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const twoTools = `
sections:
  team: { roles: [user] }
tools:
  - { name: echo, method: demo.echo, section: team, annotations: { readOnlyHint: true } }
  - { name: report, method: demo.report, section: team }
`

// findings renders a report's findings of one code as their strings.
func findings(fs []Finding, code string) []string {
	var out []string
	for _, f := range fs {
		if f.Code == code {
			out = append(out, f.String())
		}
	}
	return out
}

// TestCheckRuleUnread: a rule toolgate never reads, in a package next to
// one it reads or under a name close to one it reads, is a warning naming
// what was likely meant; helpers a read rule uses, packages of their own
// and tests are not.
func TestCheckRuleUnread(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, policy string
		want         []string // substrings of the one rule_unread warning; nil: none
	}{
		{"wrong package", "package toolgate.grants\n\ngranted := set() if \"user\" in input.caller.roles\n",
			[]string{"rego/p.rego:3:1", "rule granted in package toolgate.grants is never read", "(did you mean package toolgate.grant?)"}},
		{"package outside toolgate named like a read one", "package grant\n\ngranted := set() if \"user\" in input.caller.roles\n",
			[]string{"rule granted in package grant is never read", "(did you mean package toolgate.grant?)"}},
		{"misspelt rule in a read package", "package toolgate.grant\n\ngrantd := set() if \"user\" in input.caller.roles\n",
			[]string{"rule grantd in package toolgate.grant is never read", "(did you mean granted?)"}},
		{"call rule in the grant package", "package toolgate.grant\n\ndeny contains \"no\" if true\n",
			[]string{"rule deny in package toolgate.grant is never read"}},
		{"unused helper under toolgate", "package toolgate.lib\n\nadmin if \"admin\" in input.caller.roles\n",
			[]string{"rule admin in package toolgate.lib is never read"}},
		{"a helper a read rule uses", "package toolgate.grant\n\nis_user if \"user\" in input.caller.roles\n\ngranted := set() if is_user\n", nil},
		{"a helper in another package a read rule uses", "package toolgate.lib\n\nis_user if \"user\" in input.caller.roles\n", nil},
		{"a package of its own", "package acme.util\n\nhelper := 1\n", nil},
		{"a test rule", "package toolgate.grant\n\ntest_nothing if true\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pols := map[string]string{"p.rego": tc.policy}
			if strings.Contains(tc.name, "another package") {
				pols["q.rego"] = "package toolgate.grant\n\ngranted := set() if data.toolgate.lib.is_user\n"
			}
			rep := Check(context.Background(), CheckOptions{Source: source(twoTools, pols)})
			require.True(t, rep.PoliciesLoaded, "%v", rep.Errors)
			got := findings(rep.Warnings, CodeRuleUnread)
			if tc.want == nil {
				assert.Empty(t, got)
				return
			}
			require.Len(t, got, 1, "%v", rep.Warnings)
			for _, w := range tc.want {
				assert.Contains(t, got[0], w)
			}
		})
	}
}

// TestCheckGrantedConflict: two complete granted rules that both hold for
// a role combination check tries are an error, also when their values
// agree on the tools check sees; rules of the same constant value, and
// rules that never hold together, are not.
func TestCheckGrantedConflict(t *testing.T) {
	t.Parallel()
	readOnly := "granted := {t.name | some t in input.tools; t.base; t.annotations.readOnlyHint == true} if \"reader\" in input.caller.roles\n"
	for _, tc := range []struct {
		name, policy string
		errors       []string
	}{
		{"agree on the tools seen", "package toolgate.grant\n\n" + readOnly + "\ngranted := {\"echo\"} if \"user\" in input.caller.roles\n", []string{CodeGrantedConflict}},
		{"exclusive conditions", "package toolgate.grant\n\n" + readOnly + "\ngranted := {\"echo\"} if {\n\t\"user\" in input.caller.roles\n\tnot \"reader\" in input.caller.roles\n}\n", nil},
		{"the same constant", "package toolgate.grant\n\ngranted := set() if \"reader\" in input.caller.roles\n\ngranted := set() if \"user\" in input.caller.roles\n", nil},
		{"a partial set", "package toolgate.grant\n\ngranted contains \"echo\" if \"reader\" in input.caller.roles\n\ngranted contains \"report\" if \"user\" in input.caller.roles\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rep := Check(context.Background(), CheckOptions{Source: source(twoTools, map[string]string{"grant.rego": tc.policy})})
			got := findings(rep.Errors, CodeGrantedConflict)
			if tc.errors == nil {
				assert.Empty(t, got)
				return
			}
			require.Len(t, got, 1, "%v", rep.Errors)
			assert.Contains(t, got[0], "rego/grant.rego:3:1: (roles: reader, user): 2 complete granted rules hold for this caller (rego/grant.rego:3, rego/grant.rego:5)")
		})
	}
}

// TestCheckNoDefault: resource rules that can only be true, without a
// default, are a warning (where none holds, the base decision stands and
// nothing is hidden); with a default, or rules that can be false, they
// are not; prompts rules are read like granted and are not reported.
func TestCheckNoDefault(t *testing.T) {
	t.Parallel()
	for policy, want := range map[string]bool{
		"package toolgate.grant\n\nresource if input.resource.uri != \"res://hidden\"\n":                                          true,
		"package toolgate.grant\n\nresource := true if input.resource.uri != \"res://hidden\"\n":                                  true,
		"package toolgate.grant\n\ndefault resource := false\n\nresource if input.resource.uri != \"res://hidden\"\n":             false,
		"package toolgate.grant\n\nresource := false if input.resource.uri == \"res://hidden\"\n":                                 false,
		"package toolgate.grant\n\nresource if input.resource.uri != \"a\"\n\nresource := false if input.resource.uri == \"b\"\n": false,
		"package toolgate.grant\n\nprompts := {\"a\"} if \"user\" in input.caller.roles\n":                                        false,
	} {
		rep := Check(context.Background(), CheckOptions{Source: source(twoTools, map[string]string{"grant.rego": policy})})
		require.True(t, rep.PoliciesLoaded, "%v", rep.Errors)
		got := findings(rep.Warnings, CodeNoDefault)
		if !want {
			assert.Empty(t, got, policy)
			continue
		}
		require.Len(t, got, 1, policy)
		assert.Contains(t, got[0], "rego/grant.rego:3:1: data.toolgate.grant.resource is only ever true and has no default")
	}
}
