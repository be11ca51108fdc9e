package engine_test

import (
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
)

// The grammar FuzzSplitRowsEquivalence builds grant policies from: a
// comprehension over input.tools whose conjuncts, in the order the input
// chooses, depend on the caller alone (rowsIndependent) or read the request
// (rowsDependent), under a head and a wrapper. Among them are conjuncts that
// fail on every row, on one row, for one caller or for some requests, that
// are undefined, that bind a variable later ones use, that enumerate (so a
// row counts more than once), that carry `with`, or that are
// non-deterministic.
var (
	rowsIndependent = []string{
		`t.base`,
		`t.section == "rewards"`,
		`not url(t)`,
		`startswith(t.name, "e")`,
		`to_number(t.name) > 0`, // fails on every row
		`one(t) == 1`,           // a conflict on the row report
		`n := t.name`,
		`h == 1`,              // a conflict for bob
		`t.nothing.deep == 1`, // undefined
		`t.name in object.get(input.caller, ["claims", "tools"], [])`,
		`some a in object.get(t, "arguments", [])`, // a row once per argument
		`"manager" in input.caller.roles`,
		`admin(t) with input.caller.roles as ["admin"]`, // with: not computed once
		`time.now_ns() > 0`,                             // non-deterministic
		`count(t.name) > 4`,
		`not t.annotations.readOnlyHint`,
	}
	rowsDependent = []string{
		`not input.request.meta.hide == t.name`,
		`to_number(input.request.meta.n) > 0`,
		`input.request.meta.k != t.name`,
		`t.name != input.request.tool`,
		`to_number(input.request.meta.n) < count(t.name)`,
		`m := input.request.meta.m`,
		`two(t, input.request.meta.c) == 1`, // a conflict when c names the row
		`input.request.method == "tools/list"`,
		`not input.request.meta.all == true`,
		`upper(input.request.meta.u) != t.name`, // fails when u is not a string
		`some b in object.get(input.request.meta, "list", [])`,
	}
	rowsHeads = []string{
		`t.name`,
		`n`,
		`sprintf("%s", [t.name])`,
		`concat("", [t.name, object.get(input.request.meta, "suffix", "")])`,
		`m`, // not a string unless the request says so
	}
	rowsWrappers = []string{
		"granted := {%s}",
		"granted := {%s} if not input.request.meta.off",
		"granted := {x | some x in [%s]}",
		// Two rows of one section collide.
		"granted := {v | some v in {object.get(t, \"section\", \"\"): %s}}",
		"rows := {%s}\n\ngranted := rows if input.request.meta.r != 1",
		"granted := {%s} | {\"echo\"}",
	}
)

const rowsHelpers = `
url(t) if t.driver == "url"

one(_) := 1

one(t) := 2 if t.name == "report"

two(_, _) := 1

two(t, c) := 2 if c == t.name

h := 1

h := 2 if input.caller.subject == "bob"

admin(_) if "admin" in input.caller.roles
`

// rowsPolicy builds the policy spec describes: its first byte chooses the
// wrapper, its second the head, each next one (at most six) a conjunct,
// request-dependent when its high bit is set.
func rowsPolicy(spec []byte) string {
	at := func(i int) int {
		if i < len(spec) {
			return int(spec[i])
		}
		return 0
	}
	head := rowsHeads[at(1)%len(rowsHeads)]
	var conj []string
	for _, b := range spec[min(2, len(spec)):min(8, len(spec))] {
		c := rowsIndependent[int(b&0x7f)%len(rowsIndependent)]
		if b&0x80 != 0 {
			c = rowsDependent[int(b&0x7f)%len(rowsDependent)]
		}
		if !slices.Contains(conj, c) {
			conj = append(conj, c)
		}
	}
	// A head variable is bound somewhere.
	if head == "n" && !slices.Contains(conj, `n := t.name`) {
		conj = append([]string{`n := t.name`}, conj...)
	}
	if head == "m" && !slices.Contains(conj, `m := input.request.meta.m`) {
		conj = append(conj, `m := input.request.meta.m`)
	}
	comp := head + " | some t in input.tools"
	for _, c := range conj {
		comp += "; " + c
	}
	wrapper := rowsWrappers[at(0)%len(rowsWrappers)]
	return "package toolgate.grant\n\n" + strings.Replace(wrapper, "%s", comp, 1) + "\n" + rowsHelpers
}

var rowsEngines = struct {
	sync.Mutex
	m map[string][2]*engine.Revision
}{m: map[string][2]*engine.Revision{}}

// rowsRevisions returns the split and the whole revisions of policy, or
// the error both gave.
func rowsRevisions(t testing.TB, policy string) (split, whole *engine.Revision, err error) {
	rowsEngines.Lock()
	r, ok := rowsEngines.m[policy]
	rowsEngines.Unlock()
	if ok {
		return r[0], r[1], nil
	}
	policies := map[string]string{"grant.rego": policy}
	es, errS := loadEngine(policies)
	ew, errW := loadEngine(policies, engine.WithDecisionCache(false))
	if errW != nil || errS != nil {
		require.Error(t, errS, "the split refused nothing the whole took: %v", errW)
		require.Error(t, errW, "the whole refused nothing the split took: %v", errS)
		require.Equal(t, errW.Error(), errS.Error())
		return nil, nil, errW
	}
	r = [2]*engine.Revision{es.Current(), ew.Current()}
	rowsEngines.Lock()
	if len(rowsEngines.m) < 512 {
		rowsEngines.m[policy] = r
	}
	rowsEngines.Unlock()
	return r[0], r[1], nil
}

// FuzzSplitRowsEquivalence checks that a grant policy whose comprehension
// reads the request in its rows answers, split (the rows' conjuncts before
// the first that reads the request once per caller, the rest per call),
// exactly what the whole evaluation answers: the same outcome, sets, and
// failure, to its kind, code, message and location. Each request is asked
// twice of the split revision, so that a fresh and a kept residual answer.
// Failing inputs land in testdata/fuzz/FuzzSplitRowsEquivalence.
func FuzzSplitRowsEquivalence(f *testing.F) {
	dep := func(i int) byte { return 0x80 | byte(i) }
	specs := [][]byte{
		{0, 0, 0, 1, 2, dep(0)},          // the benchmark's shape
		{0, 0, 0, 4, dep(0)},             // a failing prefix, a failing rest
		{0, 0, 0, dep(1), 4},             // the rest first
		{1, 1, 6, 0, dep(2)},             // a bound variable in the head
		{0, 0, 5, dep(6)},                // a conflict in each part
		{0, 0, 5, dep(1)},                // the rest fails on a row before the prefix does
		{2, 0, 10, 0, dep(0)},            // rows counted once per argument
		{3, 0, 0, dep(0)},                // object keys that collide
		{4, 2, 7, 0, dep(3)},             // a helper and a conflict for bob
		{0, 3, 0, 9, dep(4)},             // the head reads the request
		{0, 4, 0, dep(5)},                // a head that may not be a string
		{5, 0, 12, 0, dep(0)},            // with: the prefix ends
		{0, 0, 0, 13, dep(0)},            // non-deterministic: the prefix ends
		{0, 0, 8, dep(0)},                // undefined rows
		{0, 0, 0, dep(10), 2},            // the rest enumerates
		{0, 0, 11, 14, 15, dep(9)},       // fails when u is not a string
		{0, 0, dep(7), 0, 1},             // the request first: nothing split
		{1, 0, 0, 3, dep(8), 2, dep(0)},  // independent after dependent
		{0, 1, 0, dep(5), 6, dep(2)},     // a prefix variable bound late
		{2, 0, 0, 5, dep(4)},             // an array's rows fail late
		{4, 0, 0, 4, dep(1), dep(6), 15}, // every failure at once
	}
	metas := []string{
		`{}`, `{"hide":"echo"}`, `{"n":"3"}`, `{"n":"x"}`, `{"n":1}`, `{"k":"echo"}`, `{"m":"echo"}`, `{"m":7}`,
		`{"c":"report"}`, `{"c":"echo"}`, `{"all":true}`, `{"u":1}`, `{"u":"echo"}`, `{"list":[1,2]}`, `{"off":true}`,
		`{"r":1}`, `{"suffix":"x"}`, `null`,
	}
	for i, spec := range specs {
		for j, meta := range metas {
			if j%4 == i%4 || j == i%len(metas) {
				f.Add(spec, uint8(i+j), uint8(i*7+j), (i+j)%3 == 0, []string{"echo", "report", "ghost", ""}[j%4], []byte(meta))
			}
		}
	}
	f.Fuzz(func(t *testing.T, spec []byte, subject, roles uint8, list bool, tool string, meta []byte) {
		split, whole, err := rowsRevisions(t, rowsPolicy(spec))
		if err != nil {
			return // refused alike
		}
		requireSplitAsWhole(t, split, whole, failedExactly, subject, roles, list, tool, meta)
	})
}
