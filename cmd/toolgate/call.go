package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/toolgate/toolgate/internal/cli/calltool"
	"github.com/toolgate/toolgate/internal/config"
)

func init() {
	register(command{name: "call", summary: "call one tool of a running server, as a client would", run: runCall})
}

const callSynopsis = "call [--token TOKEN] [--url URL | --config FILE] [--timeout D] [--format text|json] TOOL [ARGS-JSON | NAME=VALUE ...]"

// tokenEnv is the environment variable toolgate call reads a token from
// when --token is not given: a token on the command line is visible to
// every user of the machine (ps).
const tokenEnv = "TOOLGATE_TOKEN"

// runCall maps the flags to calltool.Call: exit 0 for a result, 1 for a
// result with isError or no result, 2 for a usage error.
func runCall(ctx context.Context, e *env) int {
	var (
		token, url, cfgFile string
		timeout             time.Duration
		format              = formatFlag("text")
	)
	fs := newFlags("call", callSynopsis, e.stderr)
	fs.StringVar(&token, "token", "", "the bearer `TOKEN` to send (default: $"+tokenEnv+"; none: the caller is nobody)")
	fs.StringVar(&url, "url", "", "the MCP endpoint `URL` (default: http://ADDR/mcp of the settings file's http, else of "+config.DefaultHTTP+")")
	fs.StringVar(&cfgFile, "config", "", config.FlagSetting("config").FlagUsage()+" (default: ./toolgate.yaml when present): the address to call is its http")
	fs.DurationVar(&timeout, "timeout", time.Minute, "give up after this `duration`")
	fs.Var(&format, "format", "output `format`: text (the result's text) or json (the whole CallToolResult)")
	// Flags may follow TOOL (toolgate call echo --token T text=hi).
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
	if len(pos) == 0 {
		return usageError(fs, e.stderr, "name the tool to call")
	}
	args, err := calltool.ParseArguments(pos[1:])
	if err != nil {
		return usageError(fs, e.stderr, "%v", err)
	}
	if token == "" {
		token = os.Getenv(tokenEnv)
	}
	if url == "" {
		addr, code := callAddress(e, cfgFile)
		if code != 0 {
			return code
		}
		url = calltool.EndpointOf(addr)
	} else if cfgFile != "" {
		return usageError(fs, e.stderr, "give --url or --config, not both")
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := calltool.Call(ctx, calltool.Options{URL: url, Token: token, Tool: pos[0], Arguments: args})
	var ce *calltool.ConnectError
	switch {
	case errors.As(err, &ce):
		fmt.Fprintf(e.stderr, "toolgate call: %v\n", err)
		return 1
	case err != nil:
		fmt.Fprintf(e.stderr, "toolgate call: the server answered with an error: %v\n", err)
		return 1
	}
	if format == "json" {
		err = calltool.WriteJSON(e.stdout, res)
	} else {
		err = calltool.WriteText(e.stdout, res)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "toolgate call: %v\n", err)
		return 1
	}
	if res.IsError {
		return 1
	}
	return 0
}

// callAddress is the address toolgate call reaches: the http setting of
// the settings file (file, else ./toolgate.yaml when present), else serve's
// default.
func callAddress(e *env, file string) (string, int) {
	if file == "" {
		file = projectConfig()
	}
	if file == "" {
		return config.DefaultHTTP, 0
	}
	s, err := config.LoadFile(file)
	if err != nil {
		fmt.Fprintf(e.stderr, "toolgate call: %v\n", err)
		return "", 2
	}
	if s.HTTP == "" {
		return config.DefaultHTTP, 0
	}
	return s.HTTP, 0
}

// projectFile is the settings file toolgate init writes; check, explain
// and call read it from the working directory when no --config is given.
const projectFile = "toolgate.yaml"

// projectConfig is projectFile when the working directory has it, else "".
func projectConfig() string {
	if st, err := os.Stat(projectFile); err == nil && st.Mode().IsRegular() {
		return projectFile
	}
	return ""
}
