// Package tracing makes toolgate's OpenTelemetry spans (docs/contract.md §14): a server
// span per tools/call and tools/list, continuing the client's W3C trace
// from _meta traceparent or the HTTP traceparent header, with children for
// each hook's halves and the method or upstream call, exported over
// OTLP/HTTP. The engine adds the children for the grant decision (cached or
// evaluated) and the toolgate.call rules itself, under whatever recording
// span the context carries (engine.SpanGrant, engine.SpanRules).
// Names and attributes follow the OpenTelemetry MCP semantic conventions
// ("tools/call {tool}", mcp.method.name, mcp.session.id, gen_ai.tool.name,
// gen_ai.operation.name execute_tool, error.type tool_error).
//
//	tr, err := tracing.New(ctx, tracing.Options{Endpoint: "http://collector:4318"})
//	defer tr.Shutdown(ctx)
//	server.AddReceivingMiddleware(tr.Middleware(nil)) // after the adapter's
//	adapter.AddHook(tr.WrapHook(audit.Hook()))
//
// Tracing is off by default (no endpoint, no OTEL_EXPORTER_OTLP_ENDPOINT):
// then every Start returns its context unchanged and a zero Span without
// allocating, and the wrappers return what they were given.
//
// Spans never carry argument values or error messages: failures are marked
// with a low-cardinality error.type.
package tracing
