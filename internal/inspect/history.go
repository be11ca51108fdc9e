package inspect

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/toolgate/toolgate/engine"
)

// ReadHistory reads what `explain --history` takes: a caller's history as
// input.history shows it (docs/contract.md §20), a JSON array of
// {"tool", "at" (RFC 3339), "outcome", "arguments" (an object)}, newest
// first. Unknown fields are refused, so a misspelt one is not silently
// left out of the input.
func ReadHistory(raw json.RawMessage) (engine.History, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var h engine.History
	if err := dec.Decode(&h); err != nil || h == nil {
		return nil, errors.New("want a JSON array of {tool, at, outcome, arguments}, at in RFC 3339")
	}
	if dec.More() {
		return nil, errors.New("want one JSON array")
	}
	for i, e := range h {
		if e.Tool == "" || e.Outcome == "" || e.At.IsZero() {
			return nil, fmt.Errorf("entry %d: tool, at and outcome are required", i)
		}
		if len(e.Arguments) == 0 {
			h[i].Arguments = json.RawMessage(`{}`)
			continue
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(e.Arguments, &obj) != nil || obj == nil {
			return nil, fmt.Errorf("entry %d: arguments: want a JSON object", i)
		}
	}
	return h, nil
}
