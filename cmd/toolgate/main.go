// Command toolgate serves a governed MCP server and tests, checks and
// explains its registry and policies. docs/cli.md says what each command does;
// docs/cli-reference.md lists every flag.
//
// Each command lives in a file of its own and registers itself in init: a
// params struct with the writers it uses and a function returning an exit
// code. The work lives in library packages.
//
// The documentation's generated pages (the flag reference, the settings
// reference, the policy tests' fixture) are written by the tests that
// check them:
//
//go:generate go test -run ^(TestCLIReference|TestSettingsReference|TestPolicyTestFixture)$ -update .
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"
)

// env is what a command may use of the process: its arguments (after the
// command name) and its standard streams.
type env struct {
	args   []string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, e *env) int
}

var commands = map[string]command{}

func register(c command) {
	if _, dup := commands[c.name]; dup {
		panic("toolgate: command registered twice: " + c.name)
	}
	commands[c.name] = c
}

func main() {
	setGCDefault(os.Args[1:], os.LookupEnv)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, &env{args: os.Args[1:], stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr})
	stop()
	os.Exit(code)
}

// run dispatches to a command; exit code 2 is a usage error.
func run(ctx context.Context, e *env) int {
	if len(e.args) == 0 || e.args[0] == "-h" || e.args[0] == "--help" || e.args[0] == "help" {
		usage(e.stderr)
		if len(e.args) == 0 {
			return 2
		}
		return 0
	}
	c, ok := commands[e.args[0]]
	if !ok {
		fmt.Fprintf(e.stderr, "toolgate: unknown command %q\n\n", e.args[0])
		usage(e.stderr)
		return 2
	}
	sub := *e
	sub.args = e.args[1:]
	return c.run(ctx, &sub)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: toolgate <command> [flags]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'toolgate <command> -h' for a command's flags.")
}
