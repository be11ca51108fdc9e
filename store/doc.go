// Package store keeps what toolgate must remember between calls, in one
// schema with one migration story: the idempotency ledger's keys
// (docs/contract.md §10), the approval requests of docs/contract.md §13 and
// the calls counted under the rate limits of docs/contract.md §18.
//
// Stores: [NewMemoryStore] (one process), [OpenSQLite] (a file: survives
// restarts; the default of toolgate serve) and [OpenPostgres] (shared by
// replicas). [OpenStore] reads the --ledger flag's forms ([ParseStore]).
// Each implements [Store] (the ledger's keys), [ApprovalStore] (a table
// toolgate_approvals in SQLite and PostgreSQL) and [LimitStore] (a table
// toolgate_limits), built from single-statement compare-and-swap steps or
// one transaction per call, so that replicas sharing a database share the
// keys, the requests and the limits. Implementations are safe for
// concurrent use.
//
// A completed key answers for its retention (24 hours), counted from its
// completion; after that it is as if absent and Prune removes it, in
// bounded batches. The memory store is also capped within the retention
// (100 000 completed keys, 64 MiB of results: the oldest completed keys go
// first; running claims never), and counts rate-limited calls under at
// most 100 000 distinct keys ([ErrTooManyLimitKeys] beyond). Every store
// keeps a limit key longer than 256 bytes as its SHA-256. A new SQLite file is created readable by
// its owner only.
//
// The hooks/ledger package gives the keys their meaning (the idempotency
// hook) and makes the adapter's rate limits of a [LimitStore]
// (ledger.NewLimiter); internal/server/approvals gives the approval
// requests theirs.
//
//	st, err := store.OpenSQLite(filepath.Join(stateDir, "ledger.db"))
//	if err != nil { ... }
//	defer st.Close()
//	led := ledger.New(st, ledger.Options{})
package store
