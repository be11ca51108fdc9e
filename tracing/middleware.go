package tracing

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/wire"
)

// MetaFunc returns the traceparent and tracestate entries of a request's
// _meta, "" when absent; ctx is the context the request is handled with.
type MetaFunc func(ctx context.Context, req mcp.Request) (traceparent, tracestate string)

// ParamsMeta is the MetaFunc that reads the decoded params' _meta.
func ParamsMeta(_ context.Context, req mcp.Request) (traceparent, tracestate string) {
	var m mcp.Meta
	switch r := req.(type) {
	case *mcp.CallToolRequest:
		if r.Params != nil {
			m = r.Params.Meta
		}
	case *mcp.ListToolsRequest:
		if r.Params != nil {
			m = r.Params.Meta
		}
	}
	traceparent, _ = m["traceparent"].(string)
	tracestate, _ = m["tracestate"].(string)
	return traceparent, tracestate
}

// Middleware returns the MCP receiving middleware that runs each tools/call
// and tools/list inside its server span (StartRequest); other methods pass
// through. Add it after the middleware that answers those methods (the
// adapter's), so that it runs first. meta reads the _meta trace context;
// nil is ParamsMeta. When t is off the middleware is the handler itself.
func (t *Tracer) Middleware(meta MetaFunc) mcp.Middleware { return t.MiddlewareOf(meta, nil) }

// MiddlewareOf is Middleware whose tools/call spans name the tool only
// when isRow says a registry row has that name (the revision serving's):
// the name is the client's, and a span name is what tracing backends
// index, so names no row has would let anyone mint them without end. Nil
// isRow names every tool whose name a row could have.
func (t *Tracer) MiddlewareOf(meta MetaFunc, isRow func(name string) bool) mcp.Middleware {
	if meta == nil {
		meta = ParamsMeta
	}
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		if !t.Enabled() {
			return next
		}
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "tools/call" && method != "tools/list" && !catalogMethods[method] {
				return next(ctx, method, req)
			}
			r := Request{Method: method}
			if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil {
				r.SessionID = ss.ID()
			}
			if ex := req.GetExtra(); ex != nil && ex.Header != nil {
				r.Header = ex.Header
				r.ProtocolVersion = ex.Header.Get("Mcp-Protocol-Version") // the negotiated revision, over HTTP
			}
			if c, ok := req.(*mcp.CallToolRequest); ok && c.Params != nil && (isRow == nil || isRow(c.Params.Name)) {
				r.Tool = c.Params.Name
			}
			r.TraceParent, r.TraceState = meta(ctx, req)
			ctx, span := t.StartRequest(ctx, r)
			defer span.End()
			res, err := next(ctx, method, req)
			switch {
			case err != nil:
				span.Fail("jsonrpc_error")
			case isToolError(res):
				span.Fail("tool_error")
			}
			return res, err
		}
	}
}

// RequestMiddleware is MiddlewareOf(WireMeta, isRow): the middleware a
// governed server (toolgate.New) runs each request in, reading the trace
// context from _meta as the client sent it and naming a tools/call span
// after the tool only when isRow says a row has the name. With it a
// *Tracer is a toolgate.Tracer.
func (t *Tracer) RequestMiddleware(isRow func(name string) bool) mcp.Middleware {
	return t.MiddlewareOf(WireMeta, isRow)
}

// catalogMethods are the prompts and resources methods toolgate decides
// (docs/contract.md §16): each gets a server span named by its method (the
// prompt name or URI is the client's, and is not put in it).
var catalogMethods = map[string]bool{
	"prompts/list": true, "prompts/get": true, "resources/list": true, "resources/templates/list": true,
	"resources/read": true, "resources/subscribe": true, "resources/unsubscribe": true, "completion/complete": true,
}

// isToolError reports a CallToolResult with isError (as the conventions'
// error.type tool_error); the adapter may wrap the result.
func isToolError(res mcp.Result) bool {
	switch r := res.(type) {
	case *mcp.CallToolResult:
		return r != nil && r.IsError
	case interface{ CallToolResult() *mcp.CallToolResult }:
		c := r.CallToolResult()
		return c != nil && c.IsError
	}
	return false
}

// WireMeta is the MetaFunc that reads the W3C trace context from a
// request's _meta as the client sent it (kept by the wire layer,
// mcpadapter.WrapTransport and WrapHTTP, and handed on by the adapter's
// LayerWire, which goes outside this middleware; else the decoded
// params').
func WireMeta(ctx context.Context, req mcp.Request) (traceparent, tracestate string) {
	raw := wire.InfoOf(ctx, req).Meta
	if raw == "" {
		return "", ""
	}
	var m struct {
		TraceParent string `json:"traceparent"`
		TraceState  string `json:"tracestate"`
	}
	_ = json.Unmarshal([]byte(raw), &m) // a _meta that is not an object has no trace context
	return m.TraceParent, m.TraceState
}
