package inspect

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/internal/suggest"
	"github.com/toolgate/toolgate/toolcall"
)

// readRules are the rules toolgate reads, by package (docs/contract.md):
// every other rule matters only when one of these uses it.
var readRules = map[string][]string{
	"toolgate.grant":  {"granted", "url_drivers_decided", "prompts", "resource"},
	"toolgate.call":   {"deny", "result", "approval", "confirm", "limit"},
	"toolgate.result": {"deny", "redact"},
}

// readPackages are readRules' packages, sorted.
var readPackages = slices.Sorted(maps.Keys(readRules))

// policyRule is one rule of the policies, where it is and what it defines.
type policyRule struct {
	rule *ast.Rule
	pkg  string  // the package, without "data." (toolgate.grant)
	name string  // the rule's name in the package (granted; a.b for ref heads)
	path ast.Ref // the absolute ground path it defines (data.toolgate.grant.granted)
}

// policyRules lists the rules of the modules, in the order of the files'
// names and of the rules in each.
func policyRules(modules map[string]*ast.Module) []policyRule {
	var out []policyRule
	for _, file := range slices.Sorted(maps.Keys(modules)) {
		m := modules[file]
		pkg := strings.TrimPrefix(m.Package.Path.String(), "data.")
		for _, r := range m.Rules {
			//lint:ignore SA1019 the rule's full path as a dotted name is what the check compares (ref rules are named by their ground prefix alike)
			path := r.Path()
			name := strings.TrimPrefix(strings.TrimPrefix(path.String(), m.Package.Path.String()), ".")
			out = append(out, policyRule{rule: r, pkg: pkg, name: name, path: path})
		}
	}
	return out
}

// isRead reports whether toolgate reads the document at path itself.
func isRead(path ast.Ref) bool {
	for pkg, names := range readRules {
		for _, n := range names {
			if path.Equal(ast.MustParseRef("data." + pkg + "." + n)) {
				return true
			}
		}
	}
	return false
}

// usedRules marks the rules toolgate reads and, transitively, every rule
// one of those refers to (a reference to a document reaches every rule
// inside it and the rule that defines it).
func usedRules(rules []policyRule) []bool {
	under := map[string][]int{} // a path and each of its prefixes → the rules at or below it
	at := map[string][]int{}    // a rule's own path → the rules defining it
	for i := range rules {
		p := rules[i].path
		at[p.String()] = append(at[p.String()], i)
		for k := 1; k <= len(p); k++ {
			key := p[:k].String()
			under[key] = append(under[key], i)
		}
	}
	used := make([]bool, len(rules))
	var queue []int
	mark := func(is []int) {
		for _, j := range is {
			if !used[j] {
				used[j] = true
				queue = append(queue, j)
			}
		}
	}
	for i := range rules {
		if isRead(rules[i].path) {
			mark([]int{i})
		}
	}
	for len(queue) > 0 {
		r := rules[queue[0]].rule
		queue = queue[1:]
		ast.WalkRefs(r, func(ref ast.Ref) bool {
			if !ref.HasPrefix(ast.DefaultRootRef) {
				return false
			}
			g := ref.GroundPrefix()
			mark(under[g.String()])
			for k := 1; k < len(g); k++ {
				mark(at[g[:k].String()])
			}
			return false
		})
	}
	return used
}

// checkRuleUse warns about every rule toolgate never reads, in a package
// of data.toolgate or in one named like a package toolgate reads: a rule
// in the wrong package (package toolgate.grants defining granted) or
// under a name toolgate does not read (grantd) is silently ignored, and
// the decision it was meant to make is not made. Each warning names the
// package or rule it most likely meant. Rules named test_... (tests) are
// left out, and one warning is given per document however many rules
// define it.
func checkRuleUse(rules []policyRule, r *CheckReport) {
	used := usedRules(rules)
	warned := map[string]bool{}
	for i, pr := range rules {
		if used[i] || strings.HasPrefix(pr.name, "test_") || warned[pr.path.String()] {
			continue
		}
		msg, ok := unreadMessage(pr)
		if !ok {
			continue
		}
		warned[pr.path.String()] = true
		loc := pr.rule.Location
		r.Warnf(Finding{Code: CodeRuleUnread, File: loc.File, Line: loc.Row, Col: loc.Col}, "%s", msg)
	}
}

// unreadMessage says why a rule nothing reads matters, or false when it
// is no rule toolgate could have been meant to read: one outside
// data.toolgate, unless it has a name toolgate reads in a package named
// like the one toolgate reads it in (package grant defining granted).
func unreadMessage(pr policyRule) (string, bool) {
	if names, read := readRules[pr.pkg]; read {
		msg := fmt.Sprintf("rule %s in package %s is never read: toolgate reads %s there, and none of those uses it", pr.name, pr.pkg, strings.Join(names, ", "))
		if hint := suggest.Closest(pr.name, names); hint != "" {
			msg += fmt.Sprintf(" (did you mean %s?)", hint)
		}
		return msg, true
	}
	var homes []string // the packages toolgate reads this name in
	near := false      // the package is named like one of them
	last := lastSegment(pr.pkg)
	for _, pkg := range readPackages {
		if slices.Contains(readRules[pkg], pr.name) {
			homes = append(homes, pkg)
			near = near || last == lastSegment(pkg) || suggest.Closest(last, []string{lastSegment(pkg)}) != ""
		}
	}
	under := pr.pkg == "toolgate" || strings.HasPrefix(pr.pkg, "toolgate.")
	if !under && !near {
		return "", false
	}
	msg := fmt.Sprintf("rule %s in package %s is never read: toolgate reads only packages %s, and none of their rules uses it", pr.name, pr.pkg, strings.Join(readPackages, ", "))
	hint := suggest.Closest(pr.pkg, homes)
	if hint == "" && len(homes) > 0 {
		hint = homes[0]
	}
	if hint == "" {
		hint = suggest.Closest(pr.pkg, readPackages)
	}
	if hint != "" {
		msg += fmt.Sprintf(" (did you mean package %s?)", hint)
	}
	return msg, true
}

func lastSegment(pkg string) string { return pkg[strings.LastIndex(pkg, ".")+1:] }

// checkDefaults warns about data.toolgate.grant.resource rules that can
// only be true, without a default: where none holds the value is
// undefined and the resource's base decision stands, so the rules hide
// nothing (`resource if input.resource.uri != "res://hidden"` leaves that
// resource visible to every caller its section lets see it). Rules that
// can be false (`resource := false if ...`) hide what they match and are
// not reported. A complete prompts rule is read like granted (undefined:
// the base decision stands, as documented) and is not reported.
func checkDefaults(rules []policyRule, r *CheckReport) {
	var first *ast.Rule
	for _, pr := range rules {
		if pr.pkg != "toolgate.grant" || pr.name != "resource" {
			continue
		}
		if pr.rule.Default {
			return
		}
		for rr := pr.rule; rr != nil; rr = rr.Else {
			if v := rr.Head.Value; v == nil || !v.Equal(ast.BooleanTerm(true)) {
				return // it can hide
			}
		}
		if first == nil {
			first = pr.rule
		}
	}
	if first == nil {
		return
	}
	loc := first.Location
	r.Warnf(Finding{Code: CodeNoDefault, File: loc.File, Line: loc.Row, Col: loc.Col},
		"data.toolgate.grant.resource is only ever true and has no default: where no rule holds it is undefined and the resource's base decision (its upstream's section) stands, so these rules hide nothing; add `default resource := false` to hide what they do not allow, or write `resource := false if ...` for what to hide")
}

// checkGrantedConflicts reports, for each caller tried, two or more
// complete granted rules that both hold: they agree only while their
// values happen to be equal (as with the tools check sees; an upstream's
// imported tools are not among them), and the decision fails for that
// caller whenever they differ. Rules whose values are the same constant
// never conflict and are not reported. A set of rules is reported once,
// for the first caller it holds for.
func checkGrantedConflicts(ctx context.Context, rev *engine.Revision, rules []policyRule, callers []toolcall.Caller, r *CheckReport) {
	complete := map[engine.Location]*ast.Rule{}
	for _, pr := range rules {
		if pr.pkg == "toolgate.grant" && pr.name == "granted" && !pr.rule.Default && pr.rule.Head.RuleKind() == ast.SingleValue {
			l := pr.rule.Location
			complete[engine.Location{File: l.File, Row: l.Row, Col: l.Col}] = pr.rule
		}
	}
	if len(complete) < 2 {
		return
	}
	reported := map[string]bool{}
	for k := range callers {
		c := &callers[k]
		d := rev.Explain(ctx, c, engine.Request{Method: engine.MethodList})
		if d.Outcome != engine.Override {
			continue // a failure is reported as grant_failed
		}
		var held []engine.Location
		var values []*ast.Term
		for _, l := range d.Rules {
			if rule, ok := complete[l]; ok {
				held = append(held, l)
				values = append(values, rule.Head.Value)
			}
		}
		if len(held) < 2 || sameConstant(values) {
			continue
		}
		where := make([]string, len(held))
		for i, l := range held {
			where[i] = fmt.Sprintf("%s:%d", l.File, l.Row)
		}
		key := strings.Join(where, " ")
		if reported[key] {
			continue
		}
		reported[key] = true
		r.Errorf(Finding{Code: CodeGrantedConflict, File: held[0].File, Line: held[0].Row, Col: held[0].Col, Caller: c},
			"%d complete granted rules hold for this caller (%s): when their values differ (on other tools, another upstream's listing) the decision fails with eval_conflict_error and the caller's calls are refused; make their conditions exclude each other, or write one rule",
			len(held), strings.Join(where, ", "))
	}
}

// sameConstant reports whether every value is the same ground term.
func sameConstant(values []*ast.Term) bool {
	for _, v := range values {
		if v == nil || !v.IsGround() || !v.Equal(values[0]) {
			return false
		}
	}
	return true
}
