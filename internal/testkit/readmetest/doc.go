// Package readmetest holds the tests that keep the project's documents true:
// README.md and the pages under docs/. Every docs/ page is reachable from
// the README and every relative link leads to a file and heading of the
// tree; Go snippets compile and vet, YAML blocks load as settings files (or
// registries, where a page says so), Rego blocks parse, and the policy
// guide's recipes load as the server loads them; the protocol
// revisions the README lists are served; the getting-started tour runs, end
// to end, against the binary built from the checkout, with the output it
// shows; each client configuration of docs/clients.md is started or
// connected to as written; the flags, settings keys, audit fields, metrics
// and packages the pages name are the code's. For docs/contract.md: its
// sections are numbered 1 to 20 and every test it cites exists. The
// package has no API; the conventions a page edit must keep are at the top
// of tour_test.go and clients_test.go.
package readmetest
