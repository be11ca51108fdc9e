package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/toolgate/toolgate/internal/cli/scaffold"
)

func init() {
	register(command{name: "init", summary: "scaffold a project: settings, registry, policies, policy tests, tokens", run: runInit})
}

func runInit(_ context.Context, e *env) int {
	var (
		up   string
		opts scaffold.Options
	)
	fs := newFlags("init", "init [--upstream NAME=COMMAND|URL] [--role ROLE] [DIR]", e.stderr)
	fs.StringVar(&up, "upstream", "", "govern the MCP server `NAME=COMMAND` (stdio) or NAME=URL (streamable HTTP): its tools imported closed, granted to --role")
	fs.StringVar(&opts.Role, "role", scaffold.DefaultRole, "the `ROLE` the project's sections and user token hold")
	// Flags may follow DIR (toolgate init DIR --upstream ...).
	var pos []string
	for args := e.args; ; {
		if done, code := parseFlags(fs, args); done {
			return code
		}
		if fs.NArg() == 0 {
			break
		}
		pos, args = append(pos, fs.Arg(0)), fs.Args()[1:]
	}
	if len(pos) > 1 {
		return usageError(fs, e.stderr, "unexpected arguments: %s", strings.Join(pos[1:], " "))
	}
	dir := "."
	if len(pos) == 1 {
		dir = pos[0]
	}
	if up != "" {
		u, err := scaffold.ParseUpstream(up)
		if err != nil {
			return usageError(fs, e.stderr, "--upstream: %v", err)
		}
		opts.Upstream = u
	}
	var err error
	if opts.Tokens, err = scaffold.NewTokens(); err != nil {
		fmt.Fprintf(e.stderr, "toolgate init: %v\n", err)
		return 1
	}
	files, err := scaffold.Write(dir, opts)
	if err != nil {
		fmt.Fprintf(e.stderr, "toolgate init: %v\n", err)
		return 1
	}
	for _, f := range files {
		fmt.Fprintf(e.stdout, "wrote %s\n", f)
	}
	cd := ""
	if dir != "." {
		cd = fmt.Sprintf("  cd %s\n", dir)
	}
	role := opts.Role
	if role == "" {
		role = scaffold.DefaultRole
	}
	// The one time the tokens are shown: tokens.yaml keeps their hashes.
	fmt.Fprintf(e.stdout, "\nTwo bearer tokens, shown only now (tokens.yaml keeps their SHA-256, not them):\n"+
		"  me (role %s):              %s\n"+
		"  operator (role %s):       %s\n", role, opts.Tokens.User, scaffold.OperatorRole, opts.Tokens.Operator)
	fmt.Fprintf(e.stdout, "\nNext:\n%s  toolgate test                            # the policy tests\n"+
		"  toolgate check                           # settings, registry and policies\n"+
		"  toolgate serve --config toolgate.yaml    # serve on http://127.0.0.1:8787/mcp\n"+
		"  toolgate call --token %s echo text=hi    # from another terminal\n"+
		"tokens.yaml says how to add a caller.\n", cd, opts.Tokens.User)
	return 0
}
