//go:build race

package mcpadapter_test

// raceDetector: the tests run under the race detector, which makes
// sync.Pool drop a random quarter of what it is given.
const raceDetector = true
