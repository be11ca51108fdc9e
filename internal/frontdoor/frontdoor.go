// Package frontdoor is how the toolgate binary reaches what the front door
// (package toolgate) does not hand out: an MCP server of a Server for a
// transport the binary serves itself (stdio with its --as caller, HTTP
// with its own middleware). Embedders serve a Server through its Serve
// and Handler; the go-sdk server stays inside.
package frontdoor

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/toolcall"
)

// MCPServer returns a further MCP server governed by server (a
// *toolgate.Server), whose callers are caller's, with the transport's own
// receiving middleware outermost in its one list
// (mcpadapter.Layers.Transport). It shares the Server's engine, hooks,
// observers and notifications. Serve it only through
// mcpadapter.WrapTransport or WrapHTTP, and build it before the Server's
// Close. Package toolgate sets it when it is initialised.
var MCPServer func(server any, caller mcpadapter.CallerFunc, transport []mcpadapter.Layer) *mcp.Server

// ListedInputSchema returns the inputSchema of the tool named name as
// caller's tools/list from server (a *toolgate.Server) shows it; false
// when caller is shown no such tool (mcpadapter.Adapter.ListedInputSchema).
// Package toolgate sets it when it is initialised.
var ListedInputSchema func(server any, ctx context.Context, caller *toolcall.Caller, name string) (json.RawMessage, bool)
