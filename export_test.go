package toolgate

import "github.com/toolgate/toolgate/internal/frontdoor"

// CoreOf is the core a Server wraps, for the tests of what the binary
// reaches through it (a further MCP server).
func CoreOf(s *Server) *frontdoor.Server { return s.core }
