// Package backend is what the governed server (package mcpadapter) and
// what serves its calls behind it (a Go method, package upstream) both
// speak of: the calling client as a method sees it ([Peer]), where
// imported prompts and resources come from ([Catalog]), and the raw JSON
// of a result as its upstream sent it ([KeepSent]).
//
// It holds no machinery and imports neither package, so that upstream
// implements the adapter's interfaces without importing the adapter.
// mcpadapter names these types as its own (mcpadapter.Peer,
// mcpadapter.Catalog, ...); embedders use those names.
package backend
