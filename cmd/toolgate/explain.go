package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/inspect"
)

func init() {
	register(command{name: "explain", summary: "explain the grant decision, and a call, for one caller", run: runExplainCommand})
}

const explainSynopsis = "explain [--as SUBJECT [--role ROLE ...] [--claims JSON]] [--tool NAME [--args JSON]] [--meta JSON] [--registry FILE] [--policy DIR] [--capabilities FILE] [--format text|json]"

func runExplainCommand(ctx context.Context, e *env) int {
	var (
		src                sourceFlags
		caps               capabilitiesFlag
		subject, tool      string
		claims, args, meta string
		roles              repeated
		format             = formatFlag("text")
	)
	fs := newFlags("explain", explainSynopsis, e.stderr)
	src.register(fs)
	caps.register(fs)
	fs.StringVar(&subject, "as", "", "the caller's `SUBJECT` (default: nobody)")
	fs.Var(&roles, "role", "a `ROLE` of the caller (repeatable)")
	fs.StringVar(&claims, "claims", "", "the caller's claims, a JSON `object`")
	fs.StringVar(&tool, "tool", "", "explain a tools/call of the tool `NAME`")
	fs.StringVar(&args, "args", "", "the call's arguments, `JSON` (with --tool)")
	fs.StringVar(&meta, "meta", "", "the request's _meta, `JSON`; bounded as the server bounds it")
	fs.Var(&format, "format", "output `format`: text or json")
	if done, code := parseFlags(fs, e.args); done {
		return code
	}
	if fs.NArg() > 0 {
		return usageError(fs, e.stderr, "unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	var caller *engine.Caller
	switch {
	case subject != "":
		caller = &engine.Caller{Subject: subject, Roles: []string(roles), Claims: map[string]any{}}
		if caller.Roles == nil {
			caller.Roles = []string{}
		}
		if claims != "" {
			if err := json.Unmarshal([]byte(claims), &caller.Claims); err != nil || caller.Claims == nil {
				return usageError(fs, e.stderr, "--claims: want a JSON object")
			}
		}
	case len(roles) > 0 || claims != "":
		return usageError(fs, e.stderr, "--role and --claims need --as (without it the caller is nobody)")
	}
	if args != "" && tool == "" {
		return usageError(fs, e.stderr, "--args needs --tool")
	}
	for _, f := range []struct{ name, v string }{{"args", args}, {"meta", meta}} {
		if f.v != "" && !json.Valid([]byte(f.v)) {
			return usageError(fs, e.stderr, "--%s: not valid JSON", f.name)
		}
	}
	source, err := src.source()
	if err != nil {
		return usageError(fs, e.stderr, "%v", err)
	}
	capabilities, err := caps.load()
	if err != nil {
		fmt.Fprintf(e.stderr, "toolgate explain: %v\n", err)
		return 2
	}
	p := explainParams{source: source, caps: capabilities, format: format, opts: inspect.ExplainOptions{
		Caller:    caller,
		Tool:      tool,
		Meta:      json.RawMessage(meta),
		Arguments: json.RawMessage(args),
	}}
	return p.run(ctx, e)
}

// explainParams is `toolgate explain` once its flags are read.
type explainParams struct {
	source engine.Source
	caps   *engine.Capabilities   // nil: the default
	opts   inspect.ExplainOptions // without Revision
	format formatFlag
}

// run loads the source and writes the explanation: exit 0, or 1 when the
// registry or policies do not load.
func (p *explainParams) run(ctx context.Context, e *env) int {
	eng, err := engine.New(ctx, p.source, engine.WithCapabilities(p.caps))
	if err != nil {
		fmt.Fprintf(e.stderr, "toolgate explain: %v\n(run toolgate check for every problem)\n", err)
		return 1
	}
	opts := p.opts
	opts.Revision = eng.Current()
	x := inspect.Explain(ctx, opts)
	if p.format == "json" {
		err = x.WriteJSON(e.stdout)
	} else {
		err = x.WriteText(e.stdout)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "toolgate explain: %v\n", err)
		return 1
	}
	return 0
}
