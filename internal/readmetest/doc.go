// Package readmetest holds the tests that keep the project README true: they
// compile its Go snippets and run its tour against the binary built from the
// checkout. The package has no API; see readme_test.go for the conventions a
// README edit must follow so that these tests can read it.
package readmetest
