package engine

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// historyTermsAgree: an entry's value kept by a revision is the value the
// entry converts to afresh, for a, for b after a (whatever their keys
// share), and for both read again; a failed conversion fails alike and is
// not kept.
func historyTermsAgree(t *testing.T, a, b HistoryEntry) {
	c := newHistoryTerms()
	for _, e := range []HistoryEntry{a, b, a, b} {
		want, wantErr := historyTerm(History{e}, nil)
		got, err := historyTerm(History{e}, c)
		require.Equal(t, wantErr, err, "%+v", e)
		if wantErr == nil {
			require.True(t, want.Equal(got), "%+v: %v, kept %v", e, want, got)
		}
	}
}

var historyTermsSeeds = []struct {
	tool    string
	at      int64 // seconds
	ns      int64
	outcome string
	args    string
}{
	{"echo", 0, 0, "result", `{"text":"hello"}`},
	{"echo", 0, 1, "result", `{"text":"hello"}`},
	{"echo", 1, 0, "result", `{"text":"hello"}`},
	{"ech", 0, 0, "oresult", `{"text":"hello"}`},
	{"echo", 0, 0, "result", ``},
	{"echo", 0, 0, "result", `{}`},
	{"echo", 0, 0, "result", `{"a":1,"a":2}`},
	{"echo", 0, 0, "result", `{"n":1e100000}`},
	{"pay", 1764580000, 123456789, "failed", `{"amount":12.50,"to":"sha256:00"}`},
	{"pay", -62135596800, 0, "failed", `{}`},
	{"pay", 253402300799, 999999999, "failed", `{}`},
	{"pay", 1 << 40, 5, "failed", `{}`},
}

func TestHistoryTermsAgree(t *testing.T) {
	t.Parallel()
	for _, a := range historyTermsSeeds {
		for _, b := range historyTermsSeeds {
			historyTermsAgree(t,
				HistoryEntry{Tool: a.tool, At: time.Unix(a.at, a.ns), Outcome: a.outcome, Arguments: json.RawMessage(a.args)},
				HistoryEntry{Tool: b.tool, At: time.Unix(b.at, b.ns), Outcome: b.outcome, Arguments: json.RawMessage(b.args)})
		}
	}
}

func FuzzHistoryTerms(f *testing.F) {
	for i, a := range historyTermsSeeds {
		b := historyTermsSeeds[(i+1)%len(historyTermsSeeds)]
		f.Add(a.tool, a.at, a.ns, a.outcome, []byte(a.args), b.tool, b.at, b.ns, b.outcome, []byte(b.args))
	}
	f.Fuzz(func(t *testing.T, toolA string, atA, nsA int64, outcomeA string, argsA []byte, toolB string, atB, nsB int64, outcomeB string, argsB []byte) {
		historyTermsAgree(t,
			HistoryEntry{Tool: toolA, At: time.Unix(atA, nsA), Outcome: outcomeA, Arguments: argsA},
			HistoryEntry{Tool: toolB, At: time.Unix(atB, nsB), Outcome: outcomeB, Arguments: argsB})
	})
}

// TestHistoryTermsReadAgain: a history read again for the next call (the
// same entries, a new copy of them, as a store returns them) converts
// none of its entries again: 99 more entries cost fewer allocations than
// a tenth of one per entry (converting one costs dozens; the race
// detector adds a few of its own). (Not parallel: AllocsPerRun.)
func TestHistoryTermsReadAgain(t *testing.T) {
	c := newHistoryTerms()
	history := func(n int) History {
		h := make(History, n)
		for i := range h {
			h[i] = HistoryEntry{Tool: "pay", At: time.Unix(1764580000, int64(i)), Outcome: "failed",
				Arguments: json.RawMessage(fmt.Sprintf(`{"amount":%d,"to":"acct-%d"}`, i, i))}
		}
		return h
	}
	allocs := func(n int) float64 {
		_, err := historyTerm(history(n), c) // the first read converts them
		require.NoError(t, err)
		return testing.AllocsPerRun(20, func() {
			if _, err := historyTerm(history(n), c); err != nil {
				t.Fatal(err)
			}
		}) - testing.AllocsPerRun(20, func() { _ = history(n) })
	}
	one, hundred := allocs(1), allocs(100)
	t.Logf("allocations of a history's value read again: %v for one entry, %v for 100", one, hundred)
	assert.Less(t, hundred-one, 10.0)
}
