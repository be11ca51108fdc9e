// Package mcpadapter governs a go-sdk MCP server with a toolgate engine: it
// answers tools/list and tools/call itself, exactly as docs/contract.md §5 and §6 say.
//
// One grant decision serves both: tools/list reads it leniently (a failing
// policy falls back to the registry's base decision, or to nothing with
// Options.ListFallback ListFallbackNone), tools/call strictly (a failing
// policy refuses). A tool hidden from a caller is refused with
// exactly the answer a name no row has gets — byte for byte, for any
// arguments and _meta — after the same grant decision ran.
//
// An accepted call runs the before hooks (in registration order), then the
// toolgate.call rules; refusing wins over answering. Then its arguments are
// bound against the row's JSON Schema (the inputSchema tools/list shows)
// and its method (a [methods.Method]) runs. Every answer is a
// CallToolResult; none is a JSON-RPC error, and none carries a validator's,
// decoder's or runtime's text: argument answers are rendered from a
// [*toolcall.ArgumentError]'s fields, failures get one generic answer and
// are logged in full. After hooks run exactly once for every call that
// reached the hooks or was refused by a failing grant decision.
//
// The step machine is written once: each call produces a [hooks.Record] (the
// stage it reached, the grant decision, every deny reason with the hook or
// rule file:line that gave it, who answered, the answer, the timings),
// which the after hooks receive. [DryRun] runs the same steps without
// their side effects (no Go hook, approval store, confirmation or method):
// `toolgate explain` prints its Record, so explain and a served call
// cannot disagree. Every answer string is in answers.go.
//
// Serve every transport through WrapTransport (or HTTP through WrapHTTP):
// the go-sdk decodes request params before any middleware, and the wire
// layer is what gives integer tool names, a _meta that is not an object and
// undecodable params their SPEC answers, and keeps _meta in wire order.
//
//	tools := methods.Map{}
//	tools.Register("demo.echo", func(ctx context.Context, a struct {
//		Text string `json:"text"`
//	}) (string, error) {
//		return a.Text, nil
//	})
//	a := mcpadapter.New(mcpadapter.Options{Revisions: eng, Methods: tools, Caller: callerOf})
//	server := a.NewServer(&mcp.Implementation{Name: "shop"}, nil)
//	err := server.Run(ctx, mcpadapter.WrapTransport(&mcp.StdioTransport{}))
//
// After a reload, NotifyListingChanged tells exactly the sessions whose
// listing changed (notifications/tools/list_changed), judged by the caller
// of each session's last tools/list (or of its 2026-07-28
// subscriptions/listen stream); no other session hears of it.
//
// An Adapter is safe for concurrent use once configured (AddHook before
// serving).
package mcpadapter
