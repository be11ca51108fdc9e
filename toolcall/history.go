package toolcall

import (
	"encoding/json"
	"time"
)

// HistoryEntry is one call in a caller's history (docs/contract.md §20),
// as input.history shows it.
type HistoryEntry struct {
	// Tool is the name of the tool called.
	Tool string `json:"tool"`
	// At is when the call was recorded; input.history shows it in RFC
	// 3339, UTC.
	At time.Time `json:"at"`
	// Outcome is the call's audit outcome (result, denied, limited, ...).
	Outcome string `json:"outcome"`
	// Arguments is a JSON object of the row's remembered arguments.
	Arguments json.RawMessage `json:"arguments"`
}

// History is a caller's entries for input.history, newest first. A nil
// History leaves input.history out (no history configured, or a policy
// that does not read it); an empty one is the history of a caller who
// did nothing yet.
type History []HistoryEntry
