// Package readmetest holds the tests that keep the project's documents true.
// For README.md: its Go snippets compile and vet, its YAML blocks load as
// settings files, its Rego blocks parse, the protocol revisions it lists are
// served, its links stay inside the tree, and its tour runs against the
// binary built from the checkout with the output it shows. For
// docs/contract.md: its sections are numbered 1 to 15 and every test it
// cites exists. The package has no API; the conventions a README edit must
// keep are at the top of tour_test.go.
package readmetest
