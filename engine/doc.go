// Package engine takes toolgate's decisions: registry rows, the caller and
// the bounded _meta of a request are compiled into one OPA input document
// (docs/contract.md §3), and Rego rules answer with the granted tool set
// (data.toolgate.grant.granted) and the deny reasons and result of a call
// (data.toolgate.call.deny, data.toolgate.call.result).
//
// Policies are compiled once per [Revision] and evaluated many times: a
// Revision holds the registry, the compiled policies and their prepared
// queries, and is immutable. An [Engine] holds the current Revision and swaps
// it whole on [Engine.Reload]; read [Engine.Current] once per decision, so a
// call never mixes the registry of one revision with the policies of another.
//
// Every decision is a value that says how it was reached:
//
//   - a [GrantDecision] is NoOverride (granted undefined: the base decision
//     of docs/contract.md §2 stands), Override (granted defined, even empty: exactly its
//     names), Failed (the policy failed: a *[PolicyError] carrying OPA's
//     error), or Nobody (no caller: nothing, no policy asked). tools/call
//     reads it strictly ([GrantDecision.Allowed] refuses on failure),
//     tools/list leniently ([GrantDecision.Visible] falls back to the base
//     decision);
//   - a [CallDecision] carries every deny reason with the rules (file and
//     line) that produced it, the optional result, or the failure.
//
// Evaluation is strict: built-in errors fail instead of silently making a
// rule undefined (which would drop an override and fail open), and each
// evaluation has a deadline ([WithTimeout], default 250 ms).
//
// [Engine.Reload] (and package watch, which calls it when the files change,
// debounced: docs/contract.md §9) never believes a disappearance before a settle window has
// passed, so an editor's save never serves a revision without its policy,
// and loads a changed file only once it has stopped changing for that
// window, so a policy written in chunks is never served half-written.
// Operator files are read only if they are regular files of at most
// 16 MiB. Policies are compiled with [DefaultCapabilities] (no network
// built-ins) unless [WithCapabilities] says otherwise.
// A reload that fails keeps the last good revision; [Engine.Status] reports
// the revision and the last error for /healthz.
//
// # Memory
//
// A revision's memory is bounded by its cache sizes, and what is equal
// across callers is kept once:
//
//   - per caller, at most [DefaultDecisionCacheSize] memoised decisions and
//     as many split residuals, least recently used dropped, each O(1): it
//     does not grow with the registry;
//   - per distinct value, one shared copy of each override set and
//     precomputed value callers hold, dropped with its last holder;
//   - per role set, one caller view (at most 4 096, past it views are built
//     per decision): a base flag and a pointer per row;
//   - per revision, the registry's row objects of input.tools, one per row
//     and base flag, built on first use.
//
// The sizes these come to are measured, not written down: the memory
// tests of this package (TestPerCallerMemoryIndependentOfRows,
// TestPerRoleSetMemoryIsWordsPerRow) and scripts/bench-e2e's memory report
// print them for the build at hand (docs/performance.md).
//
// All methods of Engine and Revision are safe for concurrent use.
package engine
