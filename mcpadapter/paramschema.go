package mcpadapter

import (
	"context"
	"encoding/json"

	"github.com/toolgate/toolgate/toolcall"
)

// ListedInputSchema returns the inputSchema of the tool named name as
// caller's tools/list shows it (the upstream's own, for an imported tool);
// false when caller (nil: nobody) is shown no such tool. The HTTP front
// checks a 2026-07-28 tools/call's Mcp-Param headers against it.
func (a *Adapter) ListedInputSchema(ctx context.Context, caller *toolcall.Caller, name string) (json.RawMessage, bool) {
	if caller == nil {
		return nil, false
	}
	for _, w := range a.listing(ctx, a.revision(), caller) {
		var t struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		}
		if json.Unmarshal(w, &t) == nil && t.Name == name {
			return t.InputSchema, true
		}
	}
	return nil, false
}
