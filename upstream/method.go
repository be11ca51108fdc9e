package upstream

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/backend"
	"github.com/toolgate/toolgate/methods"
	"github.com/toolgate/toolgate/toolcall"
)

// method is one upstream tool, as a row's method.
type method struct {
	conn *conn
	tool string
}

// UpstreamTool is the upstream's name of the tool: the method span of a
// call to it is a client span named after it (tracing.Upstream).
func (m *method) UpstreamTool() string { return m.tool }

// HasArgument reports whether the tool's inputSchema, as last listed,
// declares the property name. When no listing is known (the upstream was
// never reached) or the listing lacks the tool, it answers true: a down
// upstream must not look like a row/method mismatch; such a call fails
// inside the tool instead.
func (m *method) HasArgument(name string) bool {
	t, _ := m.conn.tool(m.tool)
	if t == nil {
		return true
	}
	_, ok := schemaProperties(t.InputSchema)[name]
	return ok
}

// Bind builds the call's arguments object from the validated arguments;
// it never fails.
func (m *method) Bind(args []toolcall.Arg) (methods.Invocation, error) {
	obj := make(map[string]json.RawMessage, len(args))
	for _, a := range args {
		obj[a.Name] = a.Value
	}
	return func(ctx context.Context) (*mcp.CallToolResult, error) {
		if peer := backend.PeerOf(ctx); peer != nil && peer.Caller() != nil {
			return m.conn.callRelayed(ctx, peer, m.tool, obj)
		}
		return m.conn.call(ctx, m.tool, obj)
	}, nil
}
