package identity

import "time"

// FileCheckInterval is how often a JWKS file is looked at again, for the
// tests of identity_test.
const FileCheckInterval = fileCheckInterval

// WithKeyCheckTicks makes a WithBackground verifier fetch the key set on
// each receive from ticks instead of on its timers: a test sends a tick to
// run a check, and the next send returns only once that check is done.
func WithKeyCheckTicks(ticks <-chan time.Time) Option {
	return func(o *options) { o.ticks = ticks }
}
