package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/server/gateway"
)

func init() {
	register(command{name: "serve", summary: "serve a governed MCP server over stdio or streamable HTTP", run: runServe})
}

// runServe maps the serve flags (docs/contract.md §8) to gateway.Run.
func runServe(ctx context.Context, e *env) int {
	s, err := config.LoadServe(e.args, e.stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case err != nil:
		fmt.Fprintf(e.stderr, "toolgate serve: %v\n", err)
		return 2
	}
	cfg := gateway.Config{Serve: *s, Stderr: e.stderr}
	if r, ok := e.stdin.(interface{ Close() error }); ok {
		cfg.Stdin = readCloser{e.stdin, r}
	}
	if w, ok := e.stdout.(interface{ Close() error }); ok {
		cfg.Stdout = writeCloser{e.stdout, w}
	} else {
		cfg.Stdout = nopWriteCloser{e.stdout}
	}
	if err := gateway.Run(ctx, cfg); err != nil {
		fmt.Fprintf(e.stderr, "toolgate serve: %v\n", err)
		return 1
	}
	return 0
}

type readCloser struct {
	io.Reader
	io.Closer
}

type writeCloser struct {
	io.Writer
	io.Closer
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
