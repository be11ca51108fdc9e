package main

import "runtime/debug"

// gcPercent is the garbage collector's target for `toolgate serve` when
// the environment sets neither GOGC nor GOMEMLIMIT: the heap may grow to
// (1 + gcPercent/100) times what is live before a collection, against Go's
// 100. A relayed call allocates mostly short-lived buffers (the go-sdk's
// decoder takes 32 KiB for every message it reads), so at 100 the
// collector runs every few calls; a larger target trades resident memory
// for the CPU the collections and their assists take on the call's path.
// docs/performance.md says how both were measured (scripts/bench-relay).
const gcPercent = 400

// setGCDefault sets the collector's target to gcPercent for the serve
// command when neither GOGC nor GOMEMLIMIT is set (an operator who set
// either keeps what they chose), and reports whether it did.
func setGCDefault(args []string, lookup func(string) (string, bool)) bool {
	if len(args) == 0 || args[0] != "serve" {
		return false
	}
	if _, set := lookup("GOGC"); set {
		return false
	}
	if _, set := lookup("GOMEMLIMIT"); set {
		return false
	}
	debug.SetGCPercent(gcPercent)
	return true
}
