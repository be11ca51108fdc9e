// Package backoff is toolgate's one capped exponential backoff, for the
// retries that wait longer after each failure in a row (the decision log's
// writes, the upstreams' reconnects):
//
//	wait := backoff.Exponential(100*time.Millisecond, 5*time.Second, failures)
package backoff

import "time"

// Exponential returns the wait after the n-th failure in a row (1, 2, …):
// first for n <= 1, doubled for each failure after that, at most ceiling.
// It never overflows, and takes at most 63 doublings however large n is.
func Exponential(first, ceiling time.Duration, n int) time.Duration {
	d := first
	for i := 1; i < n && d > 0 && d < ceiling; i++ {
		if d > ceiling/2 {
			return ceiling // doubling would pass it, or overflow
		}
		d *= 2
	}
	return min(d, ceiling)
}
