// Package ledger is toolgate's idempotency ledger (docs/contract.md §10): a before and
// after hook pair that runs a call carrying an idempotency key at most once
// and answers its retries with the stored result.
//
// The key is the _meta entry "festi/idempotencyKey" (Options.MetaKey),
// scoped to the caller's subject and the tool. For a call with a key:
//
//   - a free key is claimed atomically, with the SHA-256 of the canonical
//     arguments and a random token; of concurrent calls exactly one claims;
//   - a completed key answers its stored result: the method does not run;
//   - a running key refuses: "This call is already running. Retry once it
//     finished." — until the claim is older than Options.Lease (10 minutes),
//     when the next call takes it over;
//   - the same key with other arguments refuses: "This idempotency key was
//     used with different arguments.";
//   - once the call ends, a result the method returned completes the key;
//     a failure, a refusal or another hook's answer releases it. Only the
//     claim this call made is touched: a replay refused by another hook
//     releases nothing, and the owner of a claim that was taken over can
//     neither complete nor release its successor's.
//
// A completed key answers for Options.Retention (24 hours), counted from
// its completion; after that it is as if absent (a retry runs the call
// again) and [Ledger.RunPruner] removes it, in bounded batches (the
// stores' own bounds are package store's).
//
// A key that is not a non-empty string leaves the call alone. A store that
// fails makes the before half fail, so the call fails closed; the after
// half logs its store failures (the key then stays running until its lease
// ends).
//
// The keys live in a [store.Store] (memory, SQLite or PostgreSQL: package
// store), beside the approval requests and the rate limits' counts;
// [NewLimiter] makes the adapter's hooks.Limits of a
// [store.LimitStore], and [Ledger.Prune] also removes counted calls whose
// windows ended.
//
//	st, err := store.OpenSQLite(filepath.Join(stateDir, "ledger.db"))
//	if err != nil { ... }
//	defer st.Close()
//	led := ledger.New(st, ledger.Options{})
//	go led.RunPruner(ctx, 0) // until ctx is done
//	adapter.AddHook(led.Hook())
//	// adapter built with mcpadapter.Options{Limits: ledger.NewLimiter(st, nil), ...}
package ledger
