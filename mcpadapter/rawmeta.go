package mcpadapter

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// RawMeta returns the _meta of a tools/call or tools/list request as the
// client sent it (nil when absent), for a middleware that runs before the
// adapter's: tracing reads the W3C traceparent from it. It leaves the
// request as it is.
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
	raw, ok := meta[wireKey]
	if !ok {
		if len(meta) == 0 {
			return nil
		}
		b, _ := json.Marshal(meta)
		return b
	}
	var info wireInfo
	switch v := raw.(type) {
	case map[string]any:
		info.Meta, _ = v["meta"].(string)
	default:
		b, _ := json.Marshal(v)
		_ = json.Unmarshal(b, &info)
	}
	if info.Meta == "" {
		return nil
	}
	return json.RawMessage(info.Meta)
}
