package main

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestGCDefault: serve raises the collector's target when the
// environment sets neither GOGC nor GOMEMLIMIT, and leaves what the
// operator set (or another command's) alone.
func TestGCDefault(t *testing.T) {
	// Not parallel: the collector's target is the process's.
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })
	env := func(kv ...string) func(string) (string, bool) {
		return func(k string) (string, bool) {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1], true
				}
			}
			return "", false
		}
	}
	for _, tc := range []struct {
		name string
		args []string
		env  func(string) (string, bool)
		want int
	}{
		{"serve, nothing set", []string{"serve", "--http", ":0"}, env(), gcPercent},
		{"serve, GOGC set", []string{"serve"}, env("GOGC", "100"), 100},
		{"serve, GOGC empty", []string{"serve"}, env("GOGC", ""), 100},
		{"serve, GOMEMLIMIT set", []string{"serve"}, env("GOMEMLIMIT", "1GiB"), 100},
		{"check", []string{"check"}, env(), 100},
		{"no command", nil, env(), 100},
	} {
		debug.SetGCPercent(100)
		set := setGCDefault(tc.args, tc.env)
		got := debug.SetGCPercent(100)
		assert.Equal(t, tc.want, got, tc.name)
		assert.Equal(t, tc.want != 100, set, tc.name)
	}
}
