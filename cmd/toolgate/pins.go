package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"

	"github.com/toolgate/toolgate/internal/cli/pinreview"
	"github.com/toolgate/toolgate/internal/config"
)

func init() {
	register(command{name: "pins", summary: "check or accept the pinned definitions of upstream tools", run: runPins})
}

const pinsSynopsis = "pins check [serve flags] | pins accept [serve flags] (--all | UPSTREAM.TOOL ...)"

// pinsParams is `toolgate pins check|accept` once its flags are read.
type pinsParams struct {
	opts  pinreview.Options
	check bool
	all   bool
	tools []string
}

// runPins maps the flags (serve's, docs/contract.md §15) to pinreview.Check or
// pinreview.Accept.
func runPins(ctx context.Context, e *env) int {
	if len(e.args) == 0 || (e.args[0] != "check" && e.args[0] != "accept") {
		fmt.Fprintf(e.stderr, "usage: toolgate %s\n", pinsSynopsis)
		if len(e.args) > 0 && (e.args[0] == "-h" || e.args[0] == "--help") {
			return 0
		}
		return 2
	}
	p := pinsParams{check: e.args[0] == "check"}
	fs := newFlags("pins "+e.args[0], pinsSynopsis, e.stderr)
	flags := config.ServeFlags(fs)
	if !p.check {
		fs.BoolVar(&p.all, "all", false, "accept the current definition of every tool of every pinned upstream")
	}
	if done, code := parseFlags(fs, e.args[1:]); done {
		return code
	}
	if p.check && fs.NArg() > 0 {
		return usageError(fs, e.stderr, "unexpected arguments: %v", fs.Args())
	}
	if !p.check && p.all == (fs.NArg() > 0) {
		return usageError(fs, e.stderr, "give --all or the tools to accept (UPSTREAM.TOOL ...), not both")
	}
	p.tools = fs.Args()
	s, err := config.Resolve(fs, flags, e.stderr)
	if err != nil {
		fmt.Fprintf(e.stderr, "toolgate %s: %v\n", fs.Name(), err)
		return 2
	}
	p.opts = pinreview.Options{Serve: *s, Stdout: e.stdout, Stderr: e.stderr,
		Logger: slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	return p.run(ctx, e, fs)
}

// run checks (exit 1 when a tool drifted, is new or the upstreams could
// not be listed) or accepts (exit 1 on error).
func (p *pinsParams) run(ctx context.Context, e *env, fs *flag.FlagSet) int {
	if p.check {
		drift, err := pinreview.Check(ctx, p.opts)
		if err != nil {
			fmt.Fprintf(e.stderr, "toolgate %s: %v\n", fs.Name(), err)
			return 1
		}
		if drift {
			return 1
		}
		return 0
	}
	if err := pinreview.Accept(ctx, p.opts, p.tools, p.all); err != nil {
		fmt.Fprintf(e.stderr, "toolgate %s: %v\n", fs.Name(), err)
		return 1
	}
	return 0
}
