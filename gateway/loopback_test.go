package gateway

import "testing"

// TestSec04LoopbackAddr: which listen addresses count as loopback for the
// demo token (SPEC §11). Anything that binds, or may resolve to, another
// interface does not.
func TestSec04LoopbackAddr(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]bool{
		"127.0.0.1:8787":   true,
		"127.0.0.2:0":      true,
		"[::1]:8787":       true,
		"localhost:8787":   true,
		"LocalHost:0":      true,
		"0.0.0.0:8787":     false,
		":8787":            false,
		"[::]:8787":        false,
		"192.168.1.4:8787": false,
		"example.com:8787": false,
		"127.0.0.1":        false, // no port: not a listen address
		"":                 false,
	} {
		if got := loopbackAddr(addr); got != want {
			t.Errorf("loopbackAddr(%q) = %v, want %v", addr, got, want)
		}
	}
}
