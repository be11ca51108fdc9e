package mcpadapter_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/toolcall"
)

// randomJSON returns a random JSON value: scalars, non-objects, deep
// nesting, huge strings, numbers no float64 holds. Its size stays bounded.
func randomJSON(r *rand.Rand, depth int) string {
	if depth == 0 && r.IntN(10) == 0 { // a deep chain
		n := 1 + r.IntN(12)
		return strings.Repeat(`{"d":`, n) + "1" + strings.Repeat("}", n)
	}
	switch k := r.IntN(12); {
	case k == 0:
		return "null"
	case k == 1:
		return fmt.Sprint(r.IntN(2) == 0)
	case k == 2:
		return fmt.Sprint(r.Int64() - r.Int64())
	case k == 3:
		return "123456789012345678901234567890.000000000000000001"
	case k == 4:
		b, _ := json.Marshal(strings.Repeat(string(rune('a'+r.IntN(26))), r.IntN(6000)))
		return string(b)
	case k == 5:
		b, _ := json.Marshal("io.modelcontextprotocol/" + fmt.Sprint(r.Int()))
		return string(b)
	case k <= 8 && depth < 4:
		n := r.IntN(5)
		parts := make([]string, n)
		for i := range parts {
			parts[i] = randomJSON(r, depth+1)
		}
		return "[" + strings.Join(parts, ",") + "]"
	case depth < 4:
		n := r.IntN(1 + 40>>(2*depth))
		parts := make([]string, n)
		for i := range parts {
			key := fmt.Sprintf("k%d", r.IntN(50))
			if r.IntN(4) == 0 {
				key = "festi/approvedBy"
			}
			parts[i] = fmt.Sprintf("%q:%s", key, randomJSON(r, depth+1))
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	return `"leaf"`
}

// TestHiddenIsAbsent: for 1 000 random arguments and _meta values, the
// answer for a hidden tool (hidden by the base decision, or by an override)
// is byte-identical to the answer for a name no row has, apart from the
// echoed name.
//
// It runs with the grant decision cache on and off: answers must not
// depend on it.
func TestHiddenIsAbsent(t *testing.T) {
	t.Parallel()
	for _, mode := range []struct {
		cache bool
		calls int
	}{{true, 1000}, {false, 250}} { // uncached decisions cost an evaluation each
		t.Run(fmt.Sprintf("cache=%t", mode.cache), func(t *testing.T) {
			t.Parallel()
			testHiddenIsAbsent(t, mode.calls, engine.WithDecisionCache(mode.cache))
		})
	}
}

func testHiddenIsAbsent(t *testing.T, calls int, opts ...engine.Option) {
	r := rand.New(rand.NewPCG(1, 2))
	cases := []struct {
		caller *toolcall.Caller
		hidden string
	}{
		{&toolcall.Caller{Subject: "max", Roles: []string{"manager"}}, "execUrl"},             // base refuses
		{&toolcall.Caller{Subject: "cid", Roles: []string{"manager", "contractor"}}, "count"}, // override leaves out
		{nil, "echo"}, // nobody
	}
	const absent = "absentToolName"
	for _, tc := range cases {
		for _, proto := range []string{proto20250618, proto20260728} {
			g := newGoverned(t, setup{caller: tc.caller, opts: opts})
			c := g.connectRaw(t, proto)
			n := 0
			for n < calls/len(cases)/2+1 {
				args, meta := randomJSON(r, 0), randomJSON(r, 0)
				params := func(name string) string {
					return fmt.Sprintf(`{"name":%q,"arguments":%s,"_meta":%s}`, name, args, meta)
				}
				if _, ok := c.prepare(`{"params":` + params("x") + `}`); !ok {
					meta = "{}"
				}
				hid := c.call(params(tc.hidden))
				abs := c.call(params(absent))
				hid = bytes.Replace(normaliseID(hid), []byte("'"+tc.hidden+"'"), []byte("'"+absent+"'"), 1)
				require.Equal(t, string(normaliseID(abs)), string(hid), "args=%.200s meta=%.200s", args, meta)
				n++
			}
			// No hook runs for a hidden or absent tool, except the after
			// hooks of a step 3 refusal: random objects may send a key
			// twice, which no input document can represent (docs/contract.md §3).
			for _, o := range g.after.outcomes() {
				require.Equal(t, string(toolcall.OutcomeRefusedGate), o, "a hook ran for a hidden or absent tool")
			}
		}
	}
}

// normaliseID replaces the response id with 0.
func normaliseID(b []byte) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return b
	}
	m["id"] = json.RawMessage("0")
	out, _ := json.Marshal(m)
	return out
}
