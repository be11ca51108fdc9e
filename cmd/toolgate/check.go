package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/toolgate/toolgate/internal/cli/configcheck"
	"github.com/toolgate/toolgate/internal/inspect"
)

func init() {
	register(command{name: "check", summary: "validate registry and policies; report URL-driver reach", run: runCheckCommand})
}

const checkSynopsis = "check [--config FILE] [--registry FILE] [--policy DIR] [--bundle FILE [--bundle-verification-key FILE]] [--capabilities FILE] [--callers FILE] [--roles R1,R2 ...] [--format text|json]"

func runCheckCommand(ctx context.Context, e *env) int {
	var (
		src     sourceFlags
		caps    capabilitiesFlag
		cfgFile settingsFlag
		callers string
		roles   repeated
		format  = formatFlag("text")
	)
	fs := newFlags("check", checkSynopsis, e.stderr)
	cfgFile.register(fs, ": registry, policy and capabilities come from it (flags win), and the file is checked: its problems, the files, variables and commands it names, credentials written in it as literals; nothing is connected to")
	src.register(fs)
	caps.register(fs)
	fs.StringVar(&callers, "callers", "", "measure URL-driver reach for the callers in `FILE` (YAML or JSON list of {subject, roles, claims})")
	fs.Var(&roles, "roles", "measure URL-driver reach for a caller with these comma-separated `ROLES` (repeatable; \"\" is no role; default: every combination of the roles sections name)")
	fs.Var(&format, "format", "output `format`: text or json")
	if done, code := parseFlags(fs, e.args); done {
		return code
	}
	if fs.NArg() > 0 {
		return usageError(fs, e.stderr, "unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	settings, err := cfgFile.load()
	if err != nil {
		fmt.Fprintf(e.stderr, "toolgate check: %v\n", err)
		return 2
	}
	src.fill(settings, &caps)
	source, err := src.source()
	if err != nil {
		return usageError(fs, e.stderr, "%v", err)
	}
	opts := inspect.CheckOptions{Source: source, Methods: builtinMethods()}
	if path := cfgFile.file(); path != "" {
		opts.Config = configcheck.File(path)
	}
	if opts.Capabilities, err = caps.load(); err != nil {
		fmt.Fprintf(e.stderr, "toolgate check: %v\n", err)
		return 2
	}
	if callers != "" {
		if opts.Callers, err = inspect.LoadCallers(callers); err != nil {
			fmt.Fprintf(e.stderr, "toolgate check: %v\n", err)
			return 2
		}
	}
	for _, r := range roles {
		set := []string{}
		for x := range strings.SplitSeq(r, ",") {
			if x = strings.TrimSpace(x); x != "" {
				set = append(set, x)
			}
		}
		opts.RoleSets = append(opts.RoleSets, set)
	}
	p := checkParams{opts: opts, format: format}
	return p.run(ctx, e)
}

// checkParams is `toolgate check` once its flags are read.
type checkParams struct {
	opts   inspect.CheckOptions
	format formatFlag
}

// run checks and writes the report: exit 0 without errors, 1 with.
func (p *checkParams) run(ctx context.Context, e *env) int {
	rep := inspect.Check(ctx, p.opts)
	var err error
	if p.format == "json" {
		err = rep.WriteJSON(e.stdout)
	} else {
		err = rep.WriteText(e.stdout)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "toolgate check: %v\n", err)
		return 1
	}
	if !rep.OK() {
		return 1
	}
	return 0
}
