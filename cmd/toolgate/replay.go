package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/internal/lines"
	"github.com/toolgate/toolgate/internal/server/approvals"
	"github.com/toolgate/toolgate/internal/server/shadow"
)

func init() {
	register(command{name: "replay", summary: "re-decide the grant decisions of a decision log with a candidate policy", run: runReplay})
}

const replaySynopsis = "replay --decision-log FILE [--registry FILE] [--policy DIR] [--bundle FILE [--bundle-verification-key FILE]] [--capabilities FILE] [--format text|json]"

// runReplay maps the flags to shadow.Replay: exit 0 when the candidate
// decides every replayed grant decision alike, 1 when any differs or the
// candidate fails to decide one, 2 when the log or the candidate cannot
// be read.
func runReplay(ctx context.Context, e *env) int {
	var (
		src    sourceFlags
		caps   capabilitiesFlag
		log    string
		format = formatFlag("text")
	)
	fs := newFlags("replay", replaySynopsis, e.stderr)
	src.register(fs)
	caps.register(fs)
	fs.StringVar(&log, "decision-log", "", "toolgate's decision log `FILE` (JSON Lines, as serve --decision-log FILE writes)")
	fs.Var(&format, "format", "output `format`: text or json")
	if done, code := parseFlags(fs, e.args); done {
		return code
	}
	if fs.NArg() > 0 {
		return usageError(fs, e.stderr, "unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	if log == "" {
		return usageError(fs, e.stderr, "--decision-log is required")
	}
	source, err := src.source()
	if err != nil {
		return usageError(fs, e.stderr, "%v", err)
	}
	capabilities, err := caps.load()
	if err != nil {
		fmt.Fprintf(e.stderr, "toolgate replay: %v\n", err)
		return 2
	}
	eng, err := engine.New(ctx, source, engine.WithCapabilities(capabilities))
	if err != nil {
		fmt.Fprintf(e.stderr, "toolgate replay: the candidate does not load: %v\n(run toolgate check for every problem)\n", err)
		return 2
	}
	f, err := os.Open(log) // streamed: a decision log may be large
	if err != nil {
		fmt.Fprintf(e.stderr, "toolgate replay: %v\n", err)
		return 2
	}
	defer f.Close()
	res, err := shadow.Replay(ctx, f, eng.Current())
	if err != nil {
		fmt.Fprintf(e.stderr, "toolgate replay: %s: %v\n", log, err)
		return 2
	}
	if format == "json" {
		var out []byte
		if out, err = json.MarshalIndent(res, "", "  "); err == nil {
			// The log's strings, as a person reading the output sees them.
			_, err = e.stdout.Write(append(approvals.VisibleJSON(out), '\n'))
		}
	} else {
		err = writeReplay(e.stdout, res)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "toolgate replay: %v\n", err)
		return 2
	}
	if len(res.Differences) > 0 || res.Failures > 0 {
		return 1 // a candidate that fails would answer differently too
	}
	return 0
}

// writeReplay prints res for a person. Every string read from the log
// (tools, subjects, roles) and the candidate's rule locations pass
// approvals.Visible: a crafted log cannot move the terminal's cursor,
// retitle it or reorder the text around it.
func writeReplay(w io.Writer, res *shadow.ReplayResult) error {
	v := approvals.Visible
	p := lines.New(w)
	p.Line("%d grant decisions, %d replayed, %d differ, %d not replayable, %d candidate failures",
		res.Decisions, res.Replayed, len(res.Differences), len(res.NotReplayable), res.Failures)
	for _, d := range res.Differences {
		roles := make([]string, len(d.Roles))
		for i, r := range d.Roles {
			roles[i] = v(r)
		}
		p.Line("%-14s  %-10s  %s  for %s [%s]", d.Kind, v(d.Method), v(d.Tool), v(d.Subject), strings.Join(roles, ", "))
		if len(d.Candidate.GrantRules) > 0 {
			var where []string
			for _, l := range d.Candidate.GrantRules {
				where = append(where, v(l.String()))
			}
			p.Line("                candidate rules: %s", strings.Join(where, ", "))
		}
	}
	for _, n := range res.NotReplayable {
		p.Line("not replayable  line %d  %s for %s: %s", n.Line, v(n.Tool), v(n.Subject), v(n.Why))
	}
	return p.Err()
}
