// Package console is the web console for the people who run toolgate:
// who can see what (a matrix of callers × tools with the explanation of
// each cell), the approvals waiting for the signed-in person, the live
// audit trail, and the revision serving. `toolgate serve` mounts it at
// /console on the MCP listener, with the same identity as /mcp.
//
// The page is plain JavaScript modules embedded in the binary (go:embed):
// no CDN, no build step, no network at run time. It signs in with a bearer
// token pasted into the page (kept in the tab's sessionStorage, sent as
// `Authorization: Bearer`), or, with an OAuth issuer configured, through
// the issuer: authorization code with PKCE (S256) as the public client
// `toolgate-console`, redirect URI `<origin>/console/`. The browser reads
// the issuer's metadata and calls its token endpoint itself: both must be
// on the issuer's origin (the page's content security policy connects to
// no other) and answer the console's origin (CORS). There is no cookie
// and so no cross-site request to forge.
//
//	c := console.New(console.Options{
//		Auth:      func(r *http.Request) (*toolcall.Caller, bool) { ... },
//		Explainer: console.ExplainerFunc(...), // inspect.Explain over the revision serving
//		Approvals: gate,                       // *approvals.Gate
//		Activity:  act,                        // adapter.AddHook(act.Hook())
//	})
//	mux.Handle("/console/", c)
//
// # JSON endpoints
//
// The console's endpoints are documented API, usable without the page.
// Every one answers JSON (errors as {"error": "..."}) with Cache-Control:
// no-store, reads the caller from `Authorization: Bearer`, and answers
// 401 (with WWW-Authenticate: Bearer) to nobody. Those marked operator
// answer 403 to a caller without the operator role (--admin-role).
//
//	GET  /console/api/config                    anyone: {"oauth": {"issuer","client_id","resource","scopes"} | null}
//	GET  /console/api/me                        signed in: {"subject","roles","operator"}
//	GET  /console/api/approvals                 signed in: {"approvals": [request...]}, only those the caller may decide
//	POST /console/api/approvals/{id}/approve    signed in: body {"note": "..."} (optional); the request as decided
//	POST /console/api/approvals/{id}/refuse     signed in: likewise; 403 may not decide, 404 unknown, 409 not pending
//	GET  /console/api/approvals/events          signed in: text/event-stream, "event: approvals" when the queue changed
//	GET  /console/api/status                    operator: Status
//	GET  /console/api/callers                   operator: {"callers": [{"subject","roles","claims","from"}]}
//	POST /console/api/callers/parse             operator: {"document": "<callers file>"} → {"callers": [...]}; 400 names the problem
//	POST /console/api/matrix                    operator: MatrixRequest → Matrix
//	POST /console/api/explain                   operator: ExplainRequest → CellExplanation
//	GET  /console/api/activity                  operator: text/event-stream of Event
//	GET  /console/api/history?subject=&source=  operator: {"subject","source","entries": [HistoryEntry]}; 404 without a history
//
// An approval request is hooks/approvals.Request (id, subject, tool,
// arguments, reason, approvers, status, created, expires, decided_by,
// decided_at, note): approvers decide on the arguments, so they are
// shown here, and nowhere else in the console.
//
// The callers are those of Options.Callers ("from": "file") and those
// that made a call since start ("seen"); the page adds the signed-in
// person, any typed in, and those of a callers file it loads (the file
// `toolgate check --callers` reads, parsed by the same function).
//
// The matrix body is {"callers": [{"subject","roles","claims"}...] (at
// most 50), "meta": {...}, "q": "text", "offset": 0, "limit": 50 (at most
// 500)}: one page of the registry's rows, in registry order, whose name or
// section contains q (without letter case), with one cell per caller:
// visible, hidden_base (the registry's base decision), hidden_override
// (the policy's granted set), approval (a call is held for a person's
// approval), denied (toolgate.call.deny, for that _meta), answered (a rule
// answers instead of the method), failed (the grant decision or the call
// rules fail), nobody. "total" counts the rows that match.
//
// The explain body is {"caller", "tool", "meta"}; the answer holds the
// grant decision (mode, override_rules), the row's base decision and
// inspect.CallExplanation: stage, the exact answer, what decided and the
// rules that did, file:line.
//
// The activity stream (?subject=&tool=&outcome= filter it) opens with a
// comment, then sends the latest events kept (at most 1000) and each new
// one as `event: activity` with an Event as data and its seq as id, and
// `event: approvals` when the approval queue changed. An Event is the
// audit record (docs/contract.md §10) without argument values, _meta or server-side
// error text: arguments_sha256 only. A stream that falls 256 events
// behind is ended, and every stream ends after five minutes (so the
// credential is checked again); reconnect and skip the seqs already seen.
//
// Concurrency: a Console and an Activity are safe for concurrent use.
package console
