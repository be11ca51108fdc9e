package tracing

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// Attribute keys of toolgate's own spans (the MCP and GenAI ones are the
// semantic conventions'; the grant decision's and the call rules' spans are
// the engine's: engine.SpanGrant, engine.SpanRules).
const (
	// AttrHook and AttrHookPhase name a hook span's hook and half.
	AttrHook      = "toolgate.hook.name"
	AttrHookPhase = "toolgate.hook.phase"
	// AttrMethod is the registry row's method of a method span.
	AttrMethod = "toolgate.method"
	// AttrOutcome is how a tools/call ended (the audit trail's outcome).
	AttrOutcome = "toolgate.outcome"
)

// Request is what StartRequest needs of one MCP request.
type Request struct {
	// Method is the MCP method: tools/call or tools/list.
	Method string
	// Tool is the tool name of a tools/call; one no registry row can
	// have (schema: ^[A-Za-z0-9_.-]{1,128}$) is left out of the span.
	Tool string
	// SessionID is the MCP session, "" when none.
	SessionID string
	// ProtocolVersion is the negotiated MCP revision, "" when unknown.
	ProtocolVersion string
	// Header is the HTTP request's header, nil over stdio.
	Header http.Header
	// TraceParent and TraceState are the _meta entries of those names, ""
	// when absent. A valid _meta traceparent is preferred to the header's.
	TraceParent, TraceState string
}

// StartRequest starts the server span of one MCP request, continuing the
// client's trace (W3C traceparent from _meta, else from the HTTP header)
// when the Tracer trusts it (Options.TrustIncoming), else starting a new
// trace linked to the client's.
// Its name and attributes follow the OpenTelemetry MCP conventions:
// "tools/call {tool}" with mcp.method.name, gen_ai.tool.name,
// gen_ai.operation.name execute_tool, mcp.session.id; a tool name no row
// could have (rowName) is left out: "tools/call", no gen_ai.tool.name.
func (t *Tracer) StartRequest(ctx context.Context, r Request) (context.Context, Span) {
	if !t.Enabled() {
		return ctx, Span{}
	}
	opts := make([]trace.SpanStartOption, 0, 4)
	if c := t.extract(ctx, r); t.trust {
		ctx = c
	} else if sc := trace.SpanContextFromContext(c); sc.IsValid() {
		// Not trusted: a root of toolgate's own, linked to the client's.
		opts = append(opts, trace.WithNewRoot(), trace.WithLinks(trace.Link{SpanContext: sc}))
	}
	name := r.Method
	attrs := make([]attribute.KeyValue, 0, 5)
	attrs = append(attrs, semconv.McpMethodNameKey.String(r.Method))
	if r.Method == "tools/call" {
		// The name is the client's, sent before anyone is known: only one
		// a row can have goes in, so a span's size stays bounded.
		if rowName(r.Tool) {
			name += " " + r.Tool
			attrs = append(attrs, semconv.GenAIToolName(r.Tool))
		}
		attrs = append(attrs, semconv.GenAIOperationNameExecuteTool)
	}
	if r.SessionID != "" {
		attrs = append(attrs, semconv.McpSessionID(r.SessionID))
	}
	if r.ProtocolVersion != "" {
		attrs = append(attrs, semconv.McpProtocolVersion(r.ProtocolVersion))
	}
	opts = append(opts, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
	ctx, s := t.tr.Start(ctx, name, opts...)
	return ctx, Span{s}
}

// extract returns ctx with the remote span context of r, if it has one.
func (t *Tracer) extract(ctx context.Context, r Request) context.Context {
	if r.TraceParent != "" {
		c := t.prop.Extract(ctx, propagation.MapCarrier{"traceparent": r.TraceParent, "tracestate": r.TraceState})
		if trace.SpanContextFromContext(c).IsRemote() {
			return c
		}
	}
	if r.Header != nil {
		return t.prop.Extract(ctx, propagation.HeaderCarrier(r.Header))
	}
	return ctx
}

// StartHook starts the span of one half ("before" or "after") of a hook,
// named "toolgate.hook {name} {phase}".
func (t *Tracer) StartHook(ctx context.Context, name, phase string) (context.Context, Span) {
	if !t.Enabled() {
		return ctx, Span{}
	}
	ctx, s := t.tr.Start(ctx, "toolgate.hook "+name+" "+phase,
		trace.WithAttributes(attribute.String(AttrHook, name), attribute.String(AttrHookPhase, phase)))
	return ctx, Span{s}
}

// StartMethod starts the span of a row's method running: a Go method or
// the call to an upstream MCP server (a client span then, named as the
// conventions name an MCP client's: "tools/call {tool}").
func (t *Tracer) StartMethod(ctx context.Context, method string, upstreamTool string) (context.Context, Span) {
	if !t.Enabled() {
		return ctx, Span{}
	}
	if upstreamTool != "" {
		ctx, s := t.tr.Start(ctx, "tools/call "+upstreamTool, trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(attribute.String(AttrMethod, method), semconv.McpMethodNameKey.String("tools/call"),
				semconv.GenAIToolName(upstreamTool), semconv.GenAIOperationNameExecuteTool))
		return ctx, Span{s}
	}
	ctx, s := t.tr.Start(ctx, "toolgate.method "+method, trace.WithAttributes(attribute.String(AttrMethod, method)))
	return ctx, Span{s}
}

// Inject writes the span context of ctx as W3C headers (traceparent,
// tracestate) into h, for a call to an upstream over HTTP.
func (t *Tracer) Inject(ctx context.Context, h http.Header) {
	if t.Enabled() {
		t.prop.Inject(ctx, propagation.HeaderCarrier(h))
	}
}

// maxToolName is the longest tool name a registry row may have.
const maxToolName = 128

// rowName reports whether name could be a registry row's: 1 to 128
// letters, digits, "_", "." or "-".
func rowName(name string) bool {
	if name == "" || len(name) > maxToolName {
		return false
	}
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '.', c == '-':
		default:
			return false
		}
	}
	return true
}
