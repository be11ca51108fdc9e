// Package upstream connects toolgate to upstream MCP servers: a registry row
// whose method is `upstream:SERVER/TOOL` runs tool TOOL of the upstream
// SERVER, configured with `--upstream NAME=COMMAND` (stdio) or
// `--upstream NAME=URL` (streamable HTTP) (docs/contract.md §1, §8).
//
// A [Pool] holds one MCP client session per upstream and is the
// [methods.Set] for those methods; [Chain] puts it behind the Go
// tool methods:
//
//	pool, err := upstream.NewPool(cfgs, &upstream.Options{Logger: log})
//	defer pool.Close()
//	_ = pool.Connect(ctx) // optional: failures are logged and retried per call
//	a := mcpadapter.New(mcpadapter.Options{Methods: upstream.Chain(goMethods, pool), ...})
//
// The governed call is the adapter's: the arguments are bound against the
// row first, then sent as the upstream call's arguments object. An upstream
// result passes through as it is, isError included. A call that cannot
// reach the upstream — it is down, it hangs past its Timeout, it died mid
// call — fails inside the tool (the caller gets the generic internal
// answer, the log gets the detail) and never blocks past the Timeout; the
// other upstreams are not affected, and the next call reconnects.
//
// With Config.Import, [Pool.ImportedRows] turns the upstream's tools into
// rows named NAME.TOOL, and [MergeRows] adds those that no row names to a
// registry: they are then governed like any other row. They are closed by
// default (docs/contract.md §15): their section is Config.Section, upstream:NAME unless
// set, which grants nobody until the registry's sections list it; and the
// annotations the upstream declares are kept apart (registry.Imported,
// upstream_annotations in the input document) unless Config.TrustAnnotations
// makes them the rows' annotations.
//
// An importing upstream is followed: its own
// notifications/tools/list_changed make the pool list its tools again
// (debounced, ListChangedDebounce), and Options.ToolsChanged reports a
// listing that differs, as it does for a reconnect, so the host rebuilds
// its revision. With Config.Pin as well, tools are served only as the
// operator accepted them (docs/contract.md §15, package pins): the first import
// records each definition's hash in the pins file (Options.Pins), and a
// tool whose definition drifts from its pin, or a new tool, is not
// imported — absent for every caller — until `toolgate pins accept`
// records it.
package upstream
