package httpserve

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/toolgate/toolgate/identity"
	"github.com/toolgate/toolgate/internal/wire"
	"github.com/toolgate/toolgate/toolcall"
)

// ToolSchemaFunc returns the inputSchema of the tool named name as caller
// (nil: nobody) sees it listed; false when caller has no such tool. A
// tool the caller cannot see must answer false, so that the header check
// never tells of a hidden tool.
type ToolSchemaFunc func(ctx context.Context, caller *toolcall.Caller, name string) (json.RawMessage, bool)

// paramHeaders checks the Mcp-Param headers of a 2026-07-28 tools/call
// against the tool as its caller sees it listed (wire.ParamHeaderGate),
// as the go-sdk does for the tools registered with it.
func (s *Server) paramHeaders(next http.Handler) http.Handler {
	lookup := s.opts.ToolSchema
	if lookup == nil {
		return next
	}
	return wire.ParamHeaderGate(next, func(r *http.Request, name string) (json.RawMessage, bool) {
		var caller *toolcall.Caller
		if info, _ := r.Context().Value(tokenInfoKey{}).(*auth.TokenInfo); info != nil {
			if p, _ := info.Extra[principalKey].(*principal); p != nil {
				caller = identity.CloneCaller(p.caller)
			}
		}
		return lookup(r.Context(), caller, name)
	})
}
