package engine

import (
	"fmt"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/toolgate/toolgate/internal/exactjson"
	"github.com/toolgate/toolgate/internal/grantmode"
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

// historyTerm is the value of input.history.
func historyTerm(h History) (*ast.Term, error) {
	items := make([]*ast.Term, len(h))
	for i, e := range h {
		args := ast.Value(ast.NewObject())
		if len(e.Arguments) > 0 {
			v, err := exactjson.Value(e.Arguments)
			if err != nil {
				return nil, fmt.Errorf("history entry %d: arguments: %w", i, err)
			}
			args = v
		}
		items[i] = ast.ObjectTerm(
			[2]*ast.Term{keyTool, ast.StringTerm(e.Tool)},
			[2]*ast.Term{keyAt, ast.StringTerm(e.At.UTC().Format(time.RFC3339Nano))},
			[2]*ast.Term{keyOutcome, ast.StringTerm(e.Outcome)},
			[2]*ast.Term{keyArguments, ast.NewTerm(args)},
		)
	}
	return ast.ArrayTerm(items...), nil
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
