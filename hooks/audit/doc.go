// Package audit writes toolgate's audit trail (docs/contract.md §10): an after hook
// that writes one JSON line per call that reached docs/contract.md §5 step 5 or was
// refused at step 3 (grant decision failed), with the fields of [Record]:
//
//	{"decision_id":"…","timestamp":"2026-11-30T09:00:00.123456789Z","subject":"alice",
//	 "tool":"getReward","method":"demo.getReward","outcome":"denied",
//	 "reason":"Rewards are read-only today","error":"","duration_ms":1.204,
//	 "revision":"3/5f1c0e9a7b2d","meta":{"festi/runId":"r-1"},
//	 "arguments_sha256":"…","stage":"denied","grant":"no_override",
//	 "rules":["rego/call.rego:9"],
//	 "denials":[{"reason":"Rewards are read-only today","rules":["rego/call.rego:9"]}]}
//
// Besides docs/contract.md §10's fields, "stage" says at which step the call was
// decided, "grant" whether the policy's override decided (override), the
// base decision stood (no_override) or the decision failed, "rules" the
// rules (file:line) behind the answer, and "denials" each deny reason with
// the hook or rules that gave it.
//
// Argument values never appear, only the SHA-256 of the canonical
// arguments; neither do tokens or the caller's claims. Note that "error"
// is the server-side detail of a failure, which is whatever the failing
// hook, binder or method said.
//
// Writing never holds up a call: records pass through a bounded buffer to
// one writer goroutine; when it falls behind or its writer fails, records
// are dropped, counted ([Auditor.Dropped], Options.OnDrop) and logged.
//
//	a := audit.New(os.Stderr, audit.Options{OnDrop: m.AuditDropped})
//	defer a.Close()
//	adapter.AddHook(a.Hook())
package audit
