package shadow

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/toolgate/toolgate/decisionlog"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/toolcall"
)

// maxEventLine bounds one decision-log line replay reads.
const maxEventLine = 16 << 20

// NotReplayable is a logged grant decision replay does not decide: the
// candidate's grant decision may depend on what the log holds only as
// hashes (the arguments).
type NotReplayable struct {
	DecisionID string `json:"decision_id"`
	Line       int    `json:"line"`
	Tool       string `json:"tool"`
	Subject    string `json:"subject"`
	Why        string `json:"why"`
}

// ReplayResult is what Replay found.
type ReplayResult struct {
	// Decisions is the number of grant decisions read.
	Decisions int `json:"decisions"`
	// Replayed is the number decided again.
	Replayed int `json:"replayed"`
	// Failures are the replayed decisions the candidate failed to take
	// (an evaluation error or timeout): not differences.
	Failures      int             `json:"candidate_failures"`
	Differences   []Difference    `json:"differences"`
	NotReplayable []NotReplayable `json:"not_replayable"`
}

// event is the part of a toolgate decision-log event replay reads.
type event struct {
	DecisionID string `json:"decision_id"`
	Path       string `json:"path"`
	Revision   string `json:"revision"`
	Input      struct {
		Caller *struct {
			Subject string   `json:"subject"`
			Roles   []string `json:"roles"`
		} `json:"caller"`
		Request struct {
			Method string          `json:"method"`
			Tool   string          `json:"tool"`
			Meta   json.RawMessage `json:"meta"`
		} `json:"request"`
	} `json:"input"`
	Result struct {
		Granted *bool    `json:"granted"`
		Listed  []string `json:"listed"`
	} `json:"result"`
}

// Replay re-decides every grant decision of a toolgate decision log (one
// OPA decision-log event per line, decisionlog's format) with cand and
// returns the differences, as the shadow records them (DiffKinds). Events
// of other paths are skipped. A tools/call's grant decision is replayed
// only when cand's grant decision provably reads nothing of the request
// but what the log keeps (engine.Revision.DecisionMode: per caller);
// otherwise it is NotReplayable, never guessed. Listings carry no
// arguments and are always replayed. A decision the candidate fails to
// take is counted in Failures, not as a difference. The log keeps no claims: callers are
// replayed with their subject and roles.
func Replay(ctx context.Context, r io.Reader, cand *engine.Revision) (*ReplayResult, error) {
	out := &ReplayResult{Differences: []Difference{}, NotReplayable: []NotReplayable{}}
	perCaller, why := cand.DecisionMode()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxEventLine)
	line := 0
	for sc.Scan() {
		line++
		if len(sc.Bytes()) == 0 {
			continue
		}
		var ev event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return nil, fmt.Errorf("line %d: not a decision-log event: %w", line, err)
		}
		if ev.Path != decisionlog.PathGrant || ev.Input.Caller == nil {
			continue
		}
		out.Decisions++
		caller := &toolcall.Caller{Subject: ev.Input.Caller.Subject, Roles: ev.Input.Caller.Roles, Claims: map[string]any{}}
		if caller.Roles == nil {
			caller.Roles = []string{}
		}
		meta := engine.BoundMeta(ev.Input.Request.Meta)
		serving := Side{Revision: ev.Revision}
		switch ev.Input.Request.Method {
		case "tools/call":
			if ev.Result.Granted == nil {
				return nil, fmt.Errorf("line %d: a tools/call grant event without result.granted", line)
			}
			if !perCaller {
				out.NotReplayable = append(out.NotReplayable, NotReplayable{DecisionID: ev.DecisionID, Line: line, Tool: ev.Input.Request.Tool,
					Subject: caller.Subject, Why: "the candidate's grant decision may read the request, whose arguments the log holds only as hashes: " + why})
				continue
			}
			out.Replayed++
			name := ev.Input.Request.Tool
			d := cand.Explain(ctx, caller, engine.Request{Method: engine.MethodCall, Tool: name, Arguments: json.RawMessage(`{}`), Meta: meta})
			b := Side{Revision: cand.Hash(), GrantRules: d.Rules}
			var err error
			if b.Granted, err = d.Allowed(name); err != nil {
				out.Failures++
				continue
			}
			serving.Granted = *ev.Result.Granted
			for _, k := range DiffKinds(serving, b) {
				out.Differences = append(out.Differences, Difference{Kind: k, Method: "tools/call", Tool: name, Subject: caller.Subject, Roles: caller.Roles, Serving: serving, Candidate: b})
			}
		case "tools/list":
			out.Replayed++
			d := cand.Explain(ctx, caller, engine.Request{Method: engine.MethodList, Meta: meta})
			if d.Err != nil {
				out.Failures++
				continue
			}
			names := slices.Clone(ev.Result.Listed)
			for _, t := range cand.Registry().Tools {
				if !slices.Contains(names, t.Name) {
					names = append(names, t.Name)
				}
			}
			for _, n := range names {
				a := serving
				a.Granted = slices.Contains(ev.Result.Listed, n)
				b := Side{Revision: cand.Hash(), Granted: d.Visible(n), GrantRules: d.Rules}
				for _, k := range DiffKinds(a, b) {
					out.Differences = append(out.Differences, Difference{Kind: k, Method: "tools/list", Tool: n, Subject: caller.Subject, Roles: caller.Roles, Serving: a, Candidate: b})
				}
			}
		default:
			return nil, fmt.Errorf("line %d: a grant event of method %q", line, ev.Input.Request.Method)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("line %d: longer than %d bytes", line+1, maxEventLine)
		}
		return nil, err
	}
	return out, nil
}
