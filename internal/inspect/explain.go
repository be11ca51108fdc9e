package inspect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/internal/lines"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/methods"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/toolcall"
)

// The exact answers of docs/contract.md §5 that Explain can predict: the served
// pipeline's own (mcpadapter), not a copy.
const (
	AnswerNotVerified = mcpadapter.AnswerNotVerified
	AnswerInternal    = mcpadapter.AnswerInternal
)

// AnswerUnknownTool is the answer for a hidden tool and for a name no row has.
func AnswerUnknownTool(name string) string { return mcpadapter.AnswerUnknownTool(name) }

// Stages at which Explain says a tools/call would be decided: the served
// pipeline's (toolcall.Stage).
const (
	StageNobody       = string(toolcall.StageNobody)       // step 2: nobody signed in: Unknown tool
	StageNotVerified  = string(toolcall.StageNotVerified)  // step 3: the grant decision fails
	StageUnknown      = string(toolcall.StageUnknown)      // step 4: hidden, or no row has the name
	StageRuleFailed   = string(toolcall.StageRuleFailed)   // step 5: the toolgate.call rules fail
	StageDenied       = string(toolcall.StageDenied)       // step 5: refused with reasons
	StageHeld         = string(toolcall.StageHeld)         // step 5: an approval rule holds the call until a person approves it (docs/contract.md §13)
	StageLimited      = string(toolcall.StageLimited)      // step 5: a rate limit refuses the call (docs/contract.md §18)
	StageAnswered     = string(toolcall.StageAnswered)     // step 5: a rule answers instead of the method
	StageArguments    = string(toolcall.StageArguments)    // step 6: the arguments do not bind: an argument answer
	StageRun          = string(toolcall.StageRun)          // steps 6-7: the arguments are bound and the method runs
	StageWithheld     = string(toolcall.StageWithheld)     // after step 7: a result rule withholds the given result (docs/contract.md §18)
	StageResultFailed = string(toolcall.StageResultFailed) // after step 7: the result rules fail on the given result: withheld
)

// ExplainOptions is one question to Explain: a caller, and optionally a call.
type ExplainOptions struct {
	// Revision is the registry and policies to explain (required).
	Revision *engine.Revision
	// Caller is whom to explain for; nil is nobody.
	Caller *toolcall.Caller
	// Tool, when not empty, is the name of a tools/call to explain.
	Tool string
	// Meta is the raw _meta of the request; it is bounded (docs/contract.md §3) first.
	Meta json.RawMessage
	// Arguments are the call's arguments as sent; anything but a JSON
	// object is read as {}, as the server reads it (see CheckArguments).
	// With Methods they are bound as a call would bind them, and a
	// missing or wrong argument gets its argument answer (StageArguments);
	// empty: not known, the explanation stops before binding.
	Arguments json.RawMessage
	// Methods are the methods the server dispatches to (required to bind
	// Arguments); nil: the explanation stops before binding.
	Methods methods.Set
	// Prompt, when not empty, is a prompt whose decision to explain
	// (docs/contract.md §16): the revision's imported prompts.
	Prompt string
	// PromptArguments are the prompts/get arguments as the server reads
	// them (a JSON object of strings, marshalled); empty: none sent.
	PromptArguments json.RawMessage
	// URI, when not empty, is a resource URI whose decision to explain;
	// Resource is what it resolved to (mcpadapter.ResolveResource), nil
	// when nothing serves it.
	URI      string
	Resource *engine.Resource
	// Limits, when set, is read (never counted in) for the counters of
	// the call's rate limits (docs/contract.md §18): a limit that would refuse decides
	// the explanation. nil: the limits are listed without their counters.
	Limits hooks.Limits
	// History, when set, is the caller's history the call's decisions read
	// as input.history (docs/contract.md §20), newest first; nil is an
	// empty one where the registry keeps a history.
	History engine.History
	// Result, when set, is a result (a CallToolResult, JSON) the method is
	// taken to return: the explanation says what the caller would get
	// once the result rules ran on it (docs/contract.md §18).
	Result json.RawMessage
}

// CheckArguments reports whether raw is what --args must be: a JSON object.
// A server reads anything else as {}; a question about a call should not.
func CheckArguments(raw json.RawMessage) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return errors.New("want a JSON object of arguments")
	}
	return nil
}

// Explanation says how the grant decision, and optionally a call, came out
// for one caller. It is read from the same decision values the server uses.
type Explanation struct {
	// Revision is the revision's content hash.
	Revision string `json:"revision"`
	// Caller is the caller explained; nil is nobody.
	Caller *toolcall.Caller `json:"caller"`
	// Mode is how the grant decision was reached: no_override (the base
	// decision stands), override, failed or nobody.
	Mode string `json:"mode"`
	// OverrideRules are the rules (file:line) that defined granted, with an
	// override.
	OverrideRules []engine.Location `json:"override_rules,omitempty"`
	// OverrideSet is the override's set as the policy produced it, sorted,
	// including names no row has.
	OverrideSet []string `json:"override_set,omitempty"`
	// Failure is the policy failure when Mode is failed.
	Failure string `json:"failure,omitempty"`
	// Evaluation says how the revision takes grant decisions: "per_caller"
	// (memoised per caller: the policy provably decides from the caller
	// alone) or "per_call"; EvaluationWhy says why (engine.Revision.DecisionMode).
	Evaluation    string `json:"evaluation"`
	EvaluationWhy string `json:"evaluation_why"`
	// Tools explains each row, in registry order.
	Tools []RowExplanation `json:"tools"`
	// Granted are the names a tools/call may use (the strict reading), in
	// registry order; empty when the decision failed.
	Granted []string `json:"granted"`
	// Listed are the names tools/list shows (the lenient reading: a failed
	// decision falls back to the base decision).
	Listed []string `json:"listed"`
	// Call explains the tools/call of ExplainOptions.Tool; nil without one.
	Call *CallExplanation `json:"call,omitempty"`
	// Prompts explains each imported prompt (docs/contract.md §16), in
	// the revision's order, from the same grant decision as Tools.
	Prompts []PromptRow `json:"prompts,omitempty"`
	// Prompt and Resource explain ExplainOptions.Prompt and URI.
	Prompt   *PromptExplanation   `json:"prompt,omitempty"`
	Resource *ResourceExplanation `json:"resource,omitempty"`
}

// RowExplanation is the decision for one registry row.
type RowExplanation struct {
	Name    string `json:"name"`
	Section string `json:"section,omitempty"`
	Driver  string `json:"driver,omitempty"`
	// Base is the registry's own permission default (docs/contract.md §2); BaseWhy
	// says why, in words.
	Base    bool   `json:"base"`
	BaseWhy string `json:"base_why"`
	// Granted is the strict reading of the grant decision for the row.
	Granted bool `json:"granted"`
}

// CallExplanation is what a tools/call would get, read from the Record of
// a dry run of the served pipeline (mcpadapter.DryRun).
type CallExplanation struct {
	Tool string `json:"tool"`
	// Method is the row's method; empty when no row has the name.
	Method string `json:"method,omitempty"`
	// Stage is one of the Stage constants.
	Stage string `json:"stage"`
	// Bound reports that the arguments were bound to the method (StageRun
	// with Arguments and Methods).
	Bound bool `json:"bound,omitempty"`
	// Answer is the exact text the caller receives at that stage; for
	// StageAnswered the rule's result, for StageRun empty (the method's
	// result, or an argument answer, follows).
	Answer string `json:"answer,omitempty"`
	// Result is the CallToolResult a rule answers with (StageAnswered).
	Result json.RawMessage `json:"result,omitempty"`
	// Reasons are every deny reason with its rules (StageDenied).
	Reasons []engine.Reason `json:"reasons,omitempty"`
	// DecidedBy says what decided, in words; Rules are the rules
	// (file:line) that did, empty when the registry's base decision did.
	DecidedBy string            `json:"decided_by"`
	Rules     []engine.Location `json:"rules,omitempty"`
	// Failure is the policy failure, for StageNotVerified and
	// StageRuleFailed, and a binding failure that is no argument answer.
	Failure string `json:"failure,omitempty"`
	// Approval is the approval rule's value (StageHeld; also with
	// StageAnswered and StageRun, when the call consumes an approval first).
	Approval *engine.Approval `json:"approval,omitempty"`
	// Confirm is the question the user confirms before the method runs
	// (StageRun).
	Confirm string `json:"confirm,omitempty"`
	// Limits are the call's rate limits (docs/contract.md §18) with, when the store
	// was read, their counters.
	Limits []LimitExplanation `json:"limits,omitempty"`
	// Redacted reports that the result rules redacted the given result:
	// Result is what the caller would get.
	Redacted bool `json:"redacted,omitempty"`
}

// LimitExplanation is one rate limit of a call and its counter.
type LimitExplanation struct {
	engine.Limit
	// Counted reports that the store was read: Count and WaitSeconds are
	// its counter's state.
	Counted bool `json:"counted"`
	// Count is how many calls the key admitted within the last Per.
	Count int64 `json:"count"`
	// Used is the sum of their costs, for a limit with a cost
	// (docs/contract.md §20).
	Used float64 `json:"used,omitempty"`
	// Refuses reports that the limit would refuse the call now;
	// WaitSeconds is then how long until it would admit one.
	Refuses     bool  `json:"refuses"`
	WaitSeconds int64 `json:"wait_seconds,omitempty"`
}

// Explain evaluates the grant decision for a caller with the rules that
// defined it and, for a tool, runs the served call pipeline dry
// (mcpadapter.DryRun: docs/contract.md §5 steps 1 to 6), so what it says is what the
// call gets. Go hooks a server registers (the idempotency ledger, for one),
// the approval store, the confirmation and the method are not run.
//
// Explain never returns nil. It is safe for concurrent use.
func Explain(ctx context.Context, opts ExplainOptions) *Explanation {
	rev := opts.Revision
	var (
		d   *engine.GrantDecision
		rec *hooks.Record
	)
	var resultErr error
	if opts.Tool != "" {
		dry := mcpadapter.DryRunOptions{
			Revision: rev, Caller: opts.Caller, Name: opts.Tool,
			Arguments: opts.Arguments, Meta: opts.Meta, Methods: opts.Methods, Limits: opts.Limits,
			History: opts.History,
		}
		if len(opts.Result) > 0 {
			dry.Result, resultErr = ReadResult(opts.Result)
		}
		rec, d = mcpadapter.DryRunGrant(ctx, dry)
	}
	if d == nil {
		d = rev.Explain(ctx, opts.Caller, engine.Request{Method: engine.MethodList, Meta: engine.BoundMeta(opts.Meta)})
	}
	x := &Explanation{
		Revision:      rev.Hash(),
		Caller:        opts.Caller,
		Mode:          d.Outcome.String(),
		OverrideRules: d.Rules,
		OverrideSet:   d.OverrideSet(),
		Tools:         []RowExplanation{},
		Granted:       []string{},
		Listed:        []string{},
	}
	if d.Err != nil {
		x.Failure = d.Err.Error()
	}
	cached, why := rev.DecisionMode()
	x.Evaluation, x.EvaluationWhy = "per_call", why
	if cached {
		x.Evaluation = "per_caller"
	}
	reg := rev.Registry()
	for i := range reg.Tools {
		t := &reg.Tools[i]
		allowed, _ := d.Allowed(t.Name)
		x.Tools = append(x.Tools, RowExplanation{
			Name: t.Name, Section: t.Section, Driver: t.Driver,
			Base: d.Base(t.Name), BaseWhy: baseWhy(reg, t, opts.Caller), Granted: allowed,
		})
		if allowed {
			x.Granted = append(x.Granted, t.Name)
		}
		if d.Visible(t.Name) {
			x.Listed = append(x.Listed, t.Name)
		}
	}
	x.Prompts = promptRows(rev, opts.Caller, d)
	if rec != nil {
		x.Call = explainCall(rev, opts.Caller, opts.Tool, rec)
		if resultErr != nil {
			x.Call.Failure = resultErr.Error()
		}
	}
	if opts.Prompt != "" {
		x.Prompt = explainPrompt(ctx, rev, opts.Caller, opts.Prompt, opts.PromptArguments, engine.BoundMeta(opts.Meta))
	}
	if opts.URI != "" {
		x.Resource = explainResource(ctx, rev, opts.Caller, opts.URI, opts.Resource, engine.BoundMeta(opts.Meta))
	}
	return x
}

// ReadResult reads a CallToolResult given as JSON (explain --result): it
// must be one exactly, as a policy's result must (a misspelt member would
// explain another result than meant).
func ReadResult(raw json.RawMessage) (*mcp.CallToolResult, error) {
	res, err := mcpadapter.ReadCallToolResult(raw)
	if err != nil {
		return nil, fmt.Errorf("--result: %w", err)
	}
	return res, nil
}

// baseWhy says in words why the base decision for one row is what
// engine.Base (its one home) decides.
func baseWhy(reg *registry.Registry, t *registry.Tool, c *toolcall.Caller) string {
	base := engine.Base(reg, t, c)
	switch {
	case c == nil:
		return "nobody is signed in"
	case t.Section == "":
		return "no section: every signed-in caller"
	}
	sec, ok := reg.Sections[t.Section]
	switch {
	case !ok:
		return fmt.Sprintf("section %s is not in sections: nobody", t.Section)
	case base:
		for _, r := range c.Roles {
			if slices.Contains(sec.Roles, r) {
				return fmt.Sprintf("section %s lists %s", t.Section, r)
			}
		}
	}
	return fmt.Sprintf("section %s lists only %s", t.Section, strings.Join(sec.Roles, ", "))
}

// explainCall says in words what the dry run of a call decided.
func explainCall(rev *engine.Revision, c *toolcall.Caller, name string, rec *hooks.Record) *CallExplanation {
	ce := &CallExplanation{Tool: name, Stage: string(rec.Stage), Answer: rec.Answer(), Rules: rec.DecidingRules()}
	t := rev.Tool(name)
	if t != nil {
		ce.Method = t.Method
	}
	cd := rec.CallDecision
	if cd == nil {
		cd = &toolcall.CallDecision{}
	}
	switch rec.Stage {
	case toolcall.StageNobody:
		ce.DecidedBy = "nobody is signed in"
	case toolcall.StageNotVerified:
		ce.DecidedBy, ce.Failure = "the grant decision failed", rec.Grant.Err.Error()
	case toolcall.StageUnknown:
		switch {
		case t == nil:
			ce.DecidedBy = "no row has this name"
		case rec.Grant.Outcome == engine.Override:
			ce.DecidedBy = "the policy's granted set does not name it"
		default:
			ce.DecidedBy = "the base decision: " + baseWhy(rev.Registry(), t, c)
		}
	case toolcall.StageRuleFailed:
		ce.DecidedBy, ce.Failure = "the toolgate.call rules failed", rec.Err.Error()
		if cd.Err != nil {
			ce.Failure = cd.Err.Error()
		}
	case toolcall.StageDenied:
		ce.DecidedBy, ce.Reasons = "data.toolgate.call.deny", denialReasons(rec)
	case toolcall.StageHookFailed:
		ce.DecidedBy, ce.Failure = "the limit store could not answer: the call fails closed", rec.Err.Error()
	case toolcall.StageLimited:
		ce.DecidedBy = "data.toolgate.call.limit: a limit's counter is full"
	case toolcall.StageWithheld:
		ce.DecidedBy, ce.Reasons = "data.toolgate.result.deny: the result is withheld", denialReasons(rec)
	case toolcall.StageResultFailed:
		ce.DecidedBy, ce.Failure = "the result rules failed: the result is withheld", rec.Err.Error()
	case toolcall.StageHeld:
		ce.Approval, ce.Confirm = cd.Approval, cd.Confirm
		ce.DecidedBy = "data.toolgate.call.approval: held until one of " + strings.Join(cd.Approval.Approvers, ", ") +
			" approves, then the identical call goes on once"
	case toolcall.StageAnswered:
		ce.Result, ce.Answer = json.RawMessage(cd.Result), resultText(cd.Result)
		ce.DecidedBy = "data.toolgate.call.result"
	case toolcall.StageArguments:
		ce.DecidedBy = "the arguments, bound against the row's declaration"
		if rec.Argument == nil {
			ce.Failure = rec.Err.Error()
		}
	case toolcall.StageRun:
		ce.Confirm, ce.Bound, ce.Answer = rec.Confirm, rec.Bound, ""
		if rec.Result != nil { // a given result, after the result rules
			ce.Answer, ce.Redacted = rec.Answer(), rec.Redacted
			ce.Result, _ = json.Marshal(rec.Result)
		}
		if rec.Grant.Outcome == engine.Override {
			ce.DecidedBy, ce.Rules = "granted by the policy; no toolgate.call rule refuses or answers", rec.Grant.Rules
		} else {
			ce.DecidedBy = "granted by the base decision (" + baseWhy(rev.Registry(), t, c) + "); no toolgate.call rule refuses or answers"
		}
	}
	ce.Limits = explainLimits(cd.Limits, rec.Limits)
	return ce
}

// number prints a limit's number as it would be written: 500, 0.25.
func number(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// explainLimits pairs the call's limits with their counters, when read.
func explainLimits(limits []engine.Limit, states []hooks.LimitState) []LimitExplanation {
	var out []LimitExplanation
	for i, l := range limits {
		le := LimitExplanation{Limit: l}
		if i < len(states) {
			s := states[i]
			le.Counted, le.Count, le.Refuses = true, s.Count, s.Refuses()
			if l.Cost != 0 {
				le.Used = s.Used
			}
			if le.Refuses && !s.Never {
				le.WaitSeconds = int64((s.Wait + time.Second - 1) / time.Second)
			}
		}
		out = append(out, le)
	}
	return out
}

// denialReasons are rec's deny reasons with their rules, in rec's order;
// nil when it has none.
func denialReasons(rec *hooks.Record) []engine.Reason {
	var out []engine.Reason
	for _, dn := range rec.Denials {
		out = append(out, engine.Reason{Message: dn.Reason, Rules: dn.Rules})
	}
	return out
}

// resultText is the text content of a CallToolResult, its items joined by
// newlines; the JSON itself when it has none.
func resultText(raw []byte) string {
	var res struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	if json.Unmarshal(raw, &res) == nil {
		var texts []string
		for _, c := range res.Content {
			if c.Type == "text" {
				texts = append(texts, c.Text)
			}
		}
		if len(texts) > 0 {
			return strings.Join(texts, "\n")
		}
	}
	return string(raw)
}

// WriteText writes the explanation for people.
func (x *Explanation) WriteText(w io.Writer) error {
	p := lines.New(w)
	p.Line("revision  %s", x.Revision)
	p.Line("caller    %s", CallerLabel(x.Caller))
	switch x.Mode {
	case engine.Override.String():
		p.Line("decision  override: exactly the policy's granted set (%s)", locations(x.OverrideRules))
	case engine.NoOverride.String():
		p.Line("decision  no override: granted is undefined, the base decision stands")
	case engine.Failed.String():
		p.Line("decision  failed: calls are refused, tools/list falls back to the base decision")
		p.Line("          %s", x.Failure)
	case engine.Nobody.String():
		p.Line("decision  nobody: no tool, no policy asked")
	}
	if unknown := x.unknownGranted(); len(unknown) > 0 {
		p.Line("          granted also names tools no row has: %s", strings.Join(unknown, ", "))
	}
	switch x.Evaluation {
	case "per_caller":
		p.Line("evaluated once per caller, then memoised: %s", x.EvaluationWhy)
	case "per_call":
		p.Line("evaluated per call: %s", x.EvaluationWhy)
	}
	p.Line("")
	width := len("tool")
	for _, t := range x.Tools {
		width = max(width, len(t.Name))
	}
	p.Line("  %-*s  %-7s  %-7s  %s", width, "tool", "base", "granted", "why (base)")
	for _, t := range x.Tools {
		why := t.BaseWhy
		if t.Driver != "" {
			why += "; driver: " + t.Driver
		}
		p.Line("  %-*s  %-7s  %-7s  %s", width, t.Name, yesNo(t.Base), yesNo(t.Granted), why)
	}
	p.Line("")
	p.Line("granted   %s", list(x.Granted))
	if !slices.Equal(x.Granted, x.Listed) {
		p.Line("listed    %s", list(x.Listed))
	}
	if c := x.Call; c != nil {
		p.Line("")
		p.Line("call      %s", c.Tool)
		if c.Method != "" {
			p.Line("method    %s", c.Method)
		}
		p.Line("stage     %s", c.Stage)
		switch c.Stage {
		case StageRun:
			if c.Result != nil {
				p.Line("answer    %s", c.Answer)
				break
			}
			p.Line("answer    the arguments are bound and %s runs: its result, or an argument answer", c.Method)
		default:
			p.Line("answer    %s", c.Answer)
		}
		for _, r := range c.Reasons {
			p.Line("reason    %s (%s)", r.Message, locations(r.Rules))
		}
		if c.Approval != nil {
			p.Line("approval  approvers %s, ttl %s", strings.Join(c.Approval.Approvers, ", "), c.Approval.TTL)
		}
		if c.Confirm != "" {
			p.Line("confirm   %q, asked of the user before the method runs", c.Confirm)
		}
		for _, l := range c.Limits {
			state := "counter not read (no --ledger)"
			used, max := strconv.FormatInt(l.Count, 10), number(l.Max)
			if l.Cost != 0 {
				used = number(l.Used)
			}
			switch {
			case l.Refuses && l.NeverFits():
				state = fmt.Sprintf("%s of %s: refuses, the cost %s is above the max", used, max, number(l.Cost))
			case l.Refuses:
				state = fmt.Sprintf("%s of %s: refuses, admits again in %d s", used, max, l.WaitSeconds)
			case l.Counted:
				state = fmt.Sprintf("%s of %s: admits", used, max)
			}
			if l.Cost != 0 {
				p.Line("limit     %s: costs up to %s per %s, this call %s, %q (%s); %s", l.Key, max, l.Per, number(l.Cost), l.Reason, locations(l.Rules), state)
				continue
			}
			p.Line("limit     %s: %s per %s, %q (%s); %s", l.Key, max, l.Per, l.Reason, locations(l.Rules), state)
		}
		if c.Stage == StageRun && c.Result != nil {
			how := "as the method returns it"
			if c.Redacted {
				how = "redacted"
			}
			p.Line("result    %s: %s", how, c.Result)
		}
		p.Line("decided   %s", c.DecidedBy)
		if len(c.Rules) > 0 {
			p.Line("rules     %s", locations(c.Rules))
		}
		if c.Failure != "" {
			p.Line("failure   %s", c.Failure)
		}
	}
	if x.Prompt != nil {
		x.Prompt.writeText(p)
	}
	if x.Resource != nil {
		x.Resource.writeText(p)
	}
	return p.Err()
}

// WriteJSON writes the explanation as one indented JSON object.
func (x *Explanation) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(x)
}

func (x *Explanation) unknownGranted() []string {
	var out []string
	for _, n := range x.OverrideSet {
		if !slices.ContainsFunc(x.Tools, func(t RowExplanation) bool { return t.Name == n }) {
			out = append(out, n)
		}
	}
	return out
}

func locations(ls []engine.Location) string {
	if len(ls) == 0 {
		return "no rule located"
	}
	s := make([]string, len(ls))
	for i, l := range ls {
		s[i] = l.String()
	}
	return strings.Join(s, ", ")
}

func list(names []string) string {
	if len(names) == 0 {
		return "(none)"
	}
	return strings.Join(names, ", ")
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
