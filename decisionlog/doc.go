// Package decisionlog writes toolgate's decisions as OPA decision-log events
// (docs/contract.md §14): one event per grant decision (path toolgate/grant/granted) and
// per call decision (toolgate/call), argument values replaced by their
// SHA-256, to a file one JSON event per line or to a URL as OPA's
// decision-log plugin uploads them — POSTed batches, each a gzip-compressed
// JSON array — through a bounded buffer, retried with backoff, drops
// counted, flushed on Close.
//
//	l, err := decisionlog.Open("https://logs.example/logs", decisionlog.Options{
//		Labels: map[string]string{"id": instanceID, "version": version},
//	})
//	reg.MustRegister(l.Collectors()...)
//	adapter.AddObserver(l.Observer()) // every grant and call decision the adapter takes
//	defer l.Close(ctx)
//
// Logger.Observer is the one place toolgate's decisions become events; Log
// takes any other Decision.
//
// Why not OPA's own v1/plugins/logs: it runs only inside a plugins.Manager
// (its service and credential configuration, storage and compiler, status
// plugin), takes its events as *server.Info (linking OPA's HTTP server into
// the binary), evaluates mask and drop policies against the manager's
// compiler for every event, writes to the console logger rather than a file,
// and counts drops only in its internal metrics. This package keeps its
// event type's JSON field for field (Event) and its upload format, and the
// tests decode every upload with OPA's logs.EventV1.
package decisionlog
