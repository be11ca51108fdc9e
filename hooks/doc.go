// Package hooks is the vocabulary every hook and observer of a governed
// tools/call imports: what a hook sees of a call ([CallContext]), what a
// before hook decides ([Verdict], [Allow], [Deny], [Answer]), the [Hook]
// pair itself, and the [Record] of how the call was decided (its stage,
// the grant decision, every deny reason with who gave it, who answered,
// the answer and the timings) that after hooks and observers read; what
// an [Observer] hears of listings ([ListRecord]) and of prompts and
// resources ([CatalogRecord]); and the [Limits] store's answer
// ([LimitCheck]) that hooks/ledger gives.
//
// It holds no machinery: mcpadapter runs the call pipeline and fills the
// Record, the packages under hooks/ (audit, ledger) and the metrics,
// tracing and decision-log plug-ins read it. It imports toolcall's
// values (decisions, limits, locations, the revision), the registry's row
// and the go-sdk's mcp package (results), never the engine nor
// mcpadapter, so a plug-in links the vocabulary without the adapter.
//
// A before hook that refuses calls on Sundays:
//
//	closed := hooks.Hook{Name: "sunday", Prompt: true,
//		Before: func(ctx context.Context, call *hooks.CallContext) (hooks.Verdict, error) {
//			if call.Start.Weekday() == time.Sunday {
//				return hooks.Deny("Closed on Sundays."), nil
//			}
//			return hooks.Allow(), nil
//		}}
//	adapter.AddHook(closed)
package hooks
