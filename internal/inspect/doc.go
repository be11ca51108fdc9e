// Package inspect answers questions about a registry and its policies
// without serving them: [Check] validates them as a whole and measures what
// generic URL drivers reach (docs/contract.md §7); [Explain] says how the grant
// decision, and a tools/call, would come out for one caller (docs/contract.md §5). The
// toolgate binary's `check` and `explain` commands are thin wrappers around
// them.
//
//	rep := inspect.Check(ctx, inspect.CheckOptions{
//		Source:  engine.Source{Registry: "registry.yaml", Policies: "rego"},
//		Methods: methods, // the methods.Set the server dispatches to
//	})
//	rep.WriteText(os.Stdout)
//	if !rep.OK() { ... }
//
// Both read the very decision values a server uses ([engine.Revision.Grant],
// [engine.Revision.Explain], [engine.Revision.Call]); Explain of a call is
// the served pipeline run dry ([mcpadapter.DryRun]), so what it says is
// what a caller gets. Check reports every problem it finds, each a
// [Finding] with a stable code and a location; nothing stops at the first.
//
// Both functions are safe for concurrent use; their results are the
// caller's.
package inspect
