package toolgate

import (
	"context"
	"encoding/json"

	"github.com/toolgate/toolgate/internal/frontdoor"
	"github.com/toolgate/toolgate/toolcall"
)

func init() {
	frontdoor.ListedInputSchema = func(server any, ctx context.Context, caller *toolcall.Caller, name string) (json.RawMessage, bool) {
		return server.(*Server).listedInputSchema(ctx, caller, name)
	}
}

// listedInputSchema is the inputSchema of the tool named name as caller's
// tools/list shows it (every MCP server of s lists alike); false before
// any was built, or when caller is shown no such tool.
func (s *Server) listedInputSchema(ctx context.Context, caller *toolcall.Caller, name string) (json.RawMessage, bool) {
	s.mu.Lock()
	if len(s.servers) == 0 {
		s.mu.Unlock()
		return nil, false
	}
	a := s.servers[0].adapter
	s.mu.Unlock()
	return a.ListedInputSchema(ctx, caller, name)
}
