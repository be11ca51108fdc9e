package engine

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/toolgate/toolgate/internal/exactjson"
	"github.com/toolgate/toolgate/internal/grantmode"
	"github.com/toolgate/toolgate/internal/lru"
	"github.com/toolgate/toolgate/toolcall"
)

// HistoryEntry is one call in a caller's history (docs/contract.md §20),
// as input.history shows it.
type HistoryEntry = toolcall.HistoryEntry

// History is a caller's entries for input.history, newest first. A nil
// History leaves input.history out (no history configured, or a policy
// that does not read it); an empty one is the history of a caller who
// did nothing yet.
type History = toolcall.History

// Keys of a history entry.
var (
	keyHistory = ast.StringTerm("history")
	keyAt      = ast.StringTerm("at")
	keyOutcome = ast.StringTerm("outcome")
)

// historyTerm is the value of input.history. Each entry's value is taken
// from c when it holds one for the same entry, else built and kept there;
// c may be nil (nothing kept).
func historyTerm(h History, c *historyTerms) (*ast.Term, error) {
	items := make([]*ast.Term, len(h))
	var buf [256]byte
	key := buf[:0]
	for i := range h {
		var err error
		items[i], key, err = c.entry(&h[i], key)
		if err != nil {
			return nil, fmt.Errorf("history entry %d: arguments: %w", i, err)
		}
	}
	return ast.ArrayTerm(items...), nil
}

// historyTerms keeps the values of the history entries a revision built,
// so that a caller's history read again for the next call is not
// converted again (docs/performance.md). An entry's value depends only on
// its tool, time, outcome and arguments, and the key is all of them, as
// the value shows them: a kept value is the one the entry would be
// converted to now, whichever store or replica the entry was read from.
// The entries themselves are read for every call; only their conversion
// is kept. Values are frozen before they are shared.
type historyTerms struct{ lru *lru.Cache[*ast.Term] }

// historyTermsSize is how many entries' values a revision keeps: four
// callers' histories at the largest max, or many callers' shorter ones.
const historyTermsSize = 4096

func newHistoryTerms() *historyTerms {
	return &historyTerms{lru: lru.New[*ast.Term](historyTermsSize)}
}

// entry returns e's value, kept in c when c is not nil; key is scratch
// space for the key, returned for the next entry. The key holds e's time
// as its instant (seconds and nanoseconds), which its RFC 3339 text in
// UTC shows exactly.
func (c *historyTerms) entry(e *HistoryEntry, key []byte) (*ast.Term, []byte, error) {
	if c == nil {
		t, err := historyEntryTerm(e)
		return t, key, err
	}
	key = appendField(key[:0], e.Tool)
	key = binary.AppendVarint(key, e.At.Unix())
	key = binary.AppendUvarint(key, uint64(e.At.Nanosecond()))
	key = appendField(key, e.Outcome)
	key = append(key, e.Arguments...)
	if t := c.lru.Get(key); t != nil {
		return t, key, nil
	}
	t, err := historyEntryTerm(e)
	if err != nil {
		return nil, key, err
	}
	freeze(t.Value)
	return c.lru.Put(key, t), key, nil
}

// appendField appends b to key after its length, so that no two entries
// have one key.
func appendField(key []byte, b string) []byte {
	return append(binary.AppendUvarint(key, uint64(len(b))), b...)
}

// historyEntryTerm converts e.
func historyEntryTerm(e *HistoryEntry) (*ast.Term, error) {
	args := ast.Value(ast.NewObject())
	if len(e.Arguments) > 0 {
		v, err := exactjson.Value(e.Arguments)
		if err != nil {
			return nil, err
		}
		args = v
	}
	return ast.ObjectTerm(
		[2]*ast.Term{keyTool, ast.StringTerm(e.Tool)},
		[2]*ast.Term{keyAt, ast.StringTerm(e.At.UTC().Format(time.RFC3339Nano))},
		[2]*ast.Term{keyOutcome, ast.StringTerm(e.Outcome)},
		[2]*ast.Term{keyArguments, ast.NewTerm(args)},
	), nil
}

// historyReads is which decisions of a revision read input.history.
type historyReads struct {
	// grant: the grant decision (data.toolgate.grant); any: any rule
	// under data.toolgate (the grant, the call rules, the result rules).
	grant, any bool
}

var (
	refToolgate = ast.MustParseRef("data.toolgate")
	refGrantPkg = ast.MustParseRef("data.toolgate.grant")
)

// analyseHistory finds which decisions read input.history, from the
// compiled policy (the same closure analysis as the decision cache's).
func analyseHistory(c *ast.Compiler) historyReads {
	return historyReads{
		grant: grantmode.ReadsInput(c, refGrantPkg, "history"),
		any:   grantmode.ReadsInput(c, refToolgate, "history"),
	}
}

// HistoryReads reports whether the revision's policy reads input.history
// (docs/contract.md §20): in the grant decision (grant), and in any
// decision of a call (call: the grant, the toolgate.call or the result
// rules). Both are false when the registry configures no history: the
// history is then never loaded. A policy that reads it is evaluated per
// call, never memoised.
func (r *Revision) HistoryReads() (grant, call bool) {
	return r.history.grant, r.history.any
}
