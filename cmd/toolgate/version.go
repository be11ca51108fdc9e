package main

import (
	"context"

	"github.com/toolgate/toolgate/internal/version"
)

func init() {
	register(command{name: "version", summary: "print the version of toolgate, its commit, Go, OPA and go-sdk", run: runVersion})
}

func runVersion(_ context.Context, e *env) int {
	fs := newFlags("version", "version", e.stderr)
	if done, code := parseFlags(fs, e.args); done {
		return code
	}
	if fs.NArg() > 0 {
		return usageError(fs, e.stderr, "version takes no arguments")
	}
	if err := version.Get().Write(e.stdout); err != nil {
		return 1
	}
	return 0
}
