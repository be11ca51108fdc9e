package wire

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// RawMeta returns the _meta of a tools/call or tools/list request as the
// client sent it (nil when absent), leaving the request as it is: from the
// wire entry when the request passed the wire layer, else the decoded
// params' _meta re-encoded.
func RawMeta(req mcp.Request) json.RawMessage {
	var meta mcp.Meta
	switch r := req.(type) {
	case *mcp.CallToolRequest:
		if r.Params != nil {
			meta = r.Params.Meta
		}
	case *mcp.ListToolsRequest:
		if r.Params != nil {
			meta = r.Params.Meta
		}
	}
	info, ok := Peek(meta)
	if !ok {
		if len(meta) == 0 {
			return nil
		}
		b, _ := json.Marshal(meta)
		return b
	}
	if info.Meta == "" {
		return nil
	}
	return json.RawMessage(info.Meta)
}
