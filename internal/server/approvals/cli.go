package approvals

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/toolgate/toolgate/store"
)

// OpenStore opens the approval store spec names (a --ledger value as
// serve reads it, config.ParseLedger), creating a SQLite file's directory
// as serve does. Close the returned closer.
func OpenStore(ctx context.Context, spec store.StoreSpec) (store.ApprovalStore, io.Closer, error) {
	st, err := spec.Create(ctx)
	if err != nil {
		return nil, nil, err
	}
	as, ok := st.(store.ApprovalStore)
	if !ok {
		st.Close()
		return nil, nil, fmt.Errorf("ledger: the store %T keeps no approval requests", st)
	}
	return as, st, nil
}

// WriteList writes requests for a person: one line each (id, requester,
// tool, expiry, reason) and their arguments below. json writes them as a
// JSON array instead.
func WriteList(w io.Writer, list []Request, asJSON bool) error {
	if asJSON {
		if list == nil {
			list = []Request{}
		}
		b, err := json.MarshalIndent(list, "", "  ")
		if err != nil {
			return err
		}
		// The same value, with invisible characters escaped: a terminal
		// shows them as they are.
		_, err = w.Write(append(VisibleJSON(b), '\n'))
		return err
	}
	if len(list) == 0 {
		_, err := fmt.Fprintln(w, "no pending approval requests you may decide")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tREQUESTER\tTOOL\tEXPIRES\tREASON")
	for _, r := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", Visible(r.ID), Visible(r.Subject), Visible(r.Tool), r.Expires.Format(time.RFC3339), Visible(r.Reason))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// Arguments below the table, whole (a tab writer would align on
	// their lines): as ArgumentsText shows them.
	for _, r := range list {
		text := r.ArgumentsText
		if text == "" {
			text = ArgumentsText(r.Arguments)
		}
		if _, err := fmt.Fprintf(w, "\narguments of %s:\n%s\n", Visible(r.ID), text); err != nil {
			return err
		}
	}
	return nil
}

// WriteDecision writes one line saying what was decided.
func WriteDecision(w io.Writer, r Request) error {
	verb := "approved"
	if r.Status == string(store.ApprovalRefused) {
		verb = "refused"
	}
	_, err := fmt.Fprintf(w, "%s %s: %s by %s, tool %s, requested by %s\n", verb, r.ID, verb, r.DecidedBy, r.Tool, r.Subject)
	return err
}
