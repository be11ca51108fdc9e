package wire

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/jsonx"
)

// Middleware is the receiving middleware that reads what the wire layer
// carried, and the only reader of Key: it takes the entry out of a
// tools/call or tools/list request's _meta and hands the Info on, typed,
// in the context the next handler runs with (InfoOf). It goes outside
// every layer that reads the Info (tracing, the adapter's).
func Middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if info, ok := take(paramsMeta(req)); ok {
			if info.InputResponsesInvalid && revision(req) >= multiRoundTripRevision {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid params: inputResponses must be an object"}
			}
			if info.NameInvalid {
				ctx = &nameInvalidCtx{infoCtx{ctx, info.Meta}}
			} else {
				ctx = &infoCtx{ctx, info.Meta}
			}
		}
		return next(ctx, method, req)
	}
}

// InfoOf is what the wire layer saw of req, as Middleware handed it on in
// ctx. A request that did not pass the wire layer (an adapter's Call or
// List called directly, a transport not wrapped) has it derived from its
// decoded params: the _meta encoded again (its order lost; "" when
// absent), the name invalid when empty.
func InfoOf(ctx context.Context, req mcp.Request) Info {
	switch c := ctx.Value(infoKey{}).(type) {
	case *infoCtx:
		return Info{Meta: c.meta}
	case *nameInvalidCtx:
		return Info{Meta: c.meta, NameInvalid: true}
	}
	var info Info
	if meta := paramsMeta(req); meta != nil {
		b, _ := jsonx.Marshal(meta)
		info.Meta = string(b)
	}
	if c, ok := req.(*mcp.CallToolRequest); ok {
		info.NameInvalid = c.Params == nil || c.Params.Name == ""
	}
	return info
}

// infoCtx is a context carrying an Info whose name was usable, and
// nameInvalidCtx one whose name was not: one allocation of 32 bytes, where
// context.WithValue would make two.
type infoCtx struct {
	context.Context
	meta string
}

type nameInvalidCtx struct{ infoCtx }

type infoKey struct{}

func (c *infoCtx) Value(key any) any {
	if key == (infoKey{}) {
		return c
	}
	return c.Context.Value(key)
}

func (c *nameInvalidCtx) Value(key any) any {
	if key == (infoKey{}) {
		return c
	}
	return c.Context.Value(key)
}

// multiRoundTripRevision is the first protocol revision with multi
// round-trip requests (inputResponses).
const multiRoundTripRevision = "2026-07-28"

// revision is the protocol revision of req's client: the one its _meta
// names (2026-07-28 sends it with each request), else its session's.
func revision(req mcp.Request) string {
	if v, ok := paramsMeta(req)[mcp.MetaKeyProtocolVersion].(string); ok && v != "" {
		return v
	}
	if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil {
		if ip := ss.InitializeParams(); ip != nil {
			return ip.ProtocolVersion
		}
	}
	return ""
}

// paramsMeta is the decoded _meta of a tools/call or tools/list request;
// nil for other requests.
func paramsMeta(req mcp.Request) mcp.Meta {
	switch r := req.(type) {
	case *mcp.CallToolRequest:
		if r.Params != nil {
			return r.Params.Meta
		}
	case *mcp.ListToolsRequest:
		if r.Params != nil {
			return r.Params.Meta
		}
	}
	return nil
}

// take removes the wire entry from a request's _meta and returns it;
// false without one.
func take(meta mcp.Meta) (Info, bool) {
	raw, ok := meta[Key]
	if !ok {
		return Info{}, false
	}
	delete(meta, Key)
	var info Info
	switch v := raw.(type) {
	case map[string]any:
		info.Meta, _ = v["meta"].(string)
		info.NameInvalid, _ = v["nameInvalid"].(bool)
		info.InputResponsesInvalid, _ = v["inputResponsesInvalid"].(bool)
	default:
		// Its own variable: one that Unmarshal writes to lives on the
		// heap, and the common case above needs none.
		var decoded Info
		b, _ := json.Marshal(v)
		_ = json.Unmarshal(b, &decoded)
		info = decoded
	}
	return info, true
}
