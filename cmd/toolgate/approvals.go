package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/server/approvals"
	"github.com/toolgate/toolgate/store"
	"github.com/toolgate/toolgate/toolcall"
)

func init() {
	register(command{name: "approvals", summary: "list, approve or refuse the approval requests of held calls", run: runApprovalsCommand})
}

const approvalsSynopsis = "approvals list|approve ID|refuse ID --as SUBJECT --role ROLE ... [--note TEXT] [--ledger STORE] [--format text|json]"

func runApprovalsCommand(ctx context.Context, e *env) int {
	var (
		subject, note, ledger string
		roles                 repeated
		format                = formatFlag("text")
	)
	fs := newFlags("approvals", approvalsSynopsis, e.stderr)
	fs.StringVar(&subject, "as", "", "the approver's `SUBJECT` (required)")
	fs.Var(&roles, "role", "a `ROLE` of the approver (repeatable)")
	fs.StringVar(&note, "note", "", "a note recorded with the decision (approve, refuse)")
	fs.StringVar(&ledger, "ledger", "", "the `STORE` serve uses: memory, sqlite:PATH or postgres://... ("+config.FlagSetting("ledger").DefaultText()+")")
	fs.Var(&format, "format", "output `format` of list: text or json")
	// Flags may come after the action and its id: parse them apart.
	var positional []string
	args := e.args
	for {
		if done, code := parseFlags(fs, args); done {
			return code
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
	p := approvalsParams{caller: &toolcall.Caller{Subject: subject, Roles: []string(roles)}, note: note, json: format == "json"}
	switch {
	case len(positional) == 1 && positional[0] == "list":
		p.action = "list"
	case len(positional) == 2 && (positional[0] == "approve" || positional[0] == "refuse"):
		p.action, p.id = positional[0], positional[1]
	default:
		return usageError(fs, e.stderr, "want list, approve ID or refuse ID; got %q", strings.Join(positional, " "))
	}
	if subject == "" {
		return usageError(fs, e.stderr, "--as SUBJECT is required: approvals are decided by a person")
	}
	if note != "" && p.action == "list" {
		return usageError(fs, e.stderr, "--note goes with approve or refuse")
	}
	var err error
	if p.store, err = config.ParseLedger(ledger); err != nil { // serve's store for "" and "sqlite:"
		fmt.Fprintf(e.stderr, "toolgate approvals: --ledger: %v\n", err)
		return 1
	}
	return p.run(ctx, e)
}

// approvalsParams is `toolgate approvals` once its flags are read.
type approvalsParams struct {
	action string // list, approve or refuse
	id     string
	caller *toolcall.Caller
	note   string
	store  store.StoreSpec
	json   bool
}

// run acts on the store: exit 0, or 1 when the store cannot be opened or
// the decision is refused (unknown id, not an approver, not pending).
func (p *approvalsParams) run(ctx context.Context, e *env) int {
	st, closer, err := approvals.OpenStore(ctx, p.store)
	if err != nil {
		fmt.Fprintf(e.stderr, "toolgate approvals: %v\n", err)
		return 1
	}
	defer closer.Close()
	gate := approvals.New(st, approvals.Options{})
	if p.action == "list" {
		list, err := gate.AllPending(ctx, p.caller)
		if err == nil {
			err = approvals.WriteList(e.stdout, list, p.json)
		}
		if err != nil {
			fmt.Fprintf(e.stderr, "toolgate approvals: %v\n", err)
			return 1
		}
		return 0
	}
	r, err := gate.Decide(ctx, p.caller, p.id, p.action == "approve", p.note)
	switch {
	case errors.Is(err, approvals.ErrNotFound):
		fmt.Fprintf(e.stderr, "toolgate approvals: no approval request %s that %s may decide (unknown, or it needs another role)\n", p.id, p.caller.Subject)
		return 1
	case errors.Is(err, approvals.ErrForbidden):
		fmt.Fprintf(e.stderr, "toolgate approvals: %s may not decide %s: it is their own request\n", p.caller.Subject, p.id)
		return 1
	case errors.Is(err, approvals.ErrNotPending):
		fmt.Fprintf(e.stderr, "toolgate approvals: %s is not pending (%s)\n", p.id, r.Status)
		return 1
	case err != nil:
		fmt.Fprintf(e.stderr, "toolgate approvals: %v\n", err)
		return 1
	}
	if err := approvals.WriteDecision(e.stdout, r); err != nil {
		return 1
	}
	return 0
}
