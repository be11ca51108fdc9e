package toolcall

import "fmt"

// Location is a place in a policy file. Row and Col are OPA's names for the
// 1-based line and column (never a registry row: see diag.Diagnostic,
// which calls them Line and Column).
type Location struct {
	File string `json:"file"`
	Row  int    `json:"row"`
	Col  int    `json:"col"`
}

func (l Location) String() string {
	if l.File == "" {
		return "-"
	}
	return fmt.Sprintf("%s:%d", l.File, l.Row)
}

// GrantOutcome says how a grant decision was reached (the engine's
// Outcome).
type GrantOutcome int

const (
	// GrantNoOverride: data.toolgate.grant.granted is undefined; the base
	// decision stands.
	GrantNoOverride GrantOutcome = iota
	// GrantOverride: granted is defined (even empty); exactly its names are
	// granted.
	GrantOverride
	// GrantFailed: evaluating the policy failed.
	GrantFailed
	// GrantNobody: no caller is signed in; nothing is granted and no policy
	// was asked.
	GrantNobody
)

func (o GrantOutcome) String() string {
	switch o {
	case GrantNoOverride:
		return "no_override"
	case GrantOverride:
		return "override"
	case GrantFailed:
		return "failed"
	case GrantNobody:
		return "nobody"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}
