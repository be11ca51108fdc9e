package decisionlog

import (
	"context"
	"crypto/rand"
	"encoding/hex"

	"go.opentelemetry.io/otel/trace"

	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/toolcall"
)

// Observer returns the adapter observer (mcpadapter.Adapter.AddObserver)
// that logs every decision SPEC §14 names:
//
//   - one PathGrant event per grant decision: each tools/list of a
//     signed-in caller (its result the names listed), and each tools/call
//     that took one — step 3 failures and step 4 refusals included, a
//     hidden name logged exactly as one no row has (its id is the call's
//     decision id + "-grant", custom.call_decision_id the call's);
//   - one PathCall event per tools/call that reached step 5 or failed at
//     step 3 (the calls the audit trail writes), under the call's decision
//     id, the audit line's decision_id.
//
// Nobody signed in takes no grant decision, so is not logged. Each event
// carries the revision the decision read and the trace and span of ctx.
// A nil *Logger's observer logs nothing.
func (l *Logger) Observer() hooks.Observer {
	return hooks.Observer{Name: "decision-log", Call: l.observeCall, List: l.observeList, Catalog: l.observeCatalog}
}

// observeCatalog logs the decision on a prompt or a resource
// (docs/contract.md §16): a PathGrant event whose method is the MCP method
// and whose tool is the prompt name or the URI as sent; its result says
// whether it was relayed, how the decision came out and the upstream
// (none for what is hidden or does not exist: logged alike).
func (l *Logger) observeCatalog(ctx context.Context, rec *hooks.CatalogRecord) {
	if l == nil {
		return
	}
	res := map[string]any{"allowed": rec.Allowed, "outcome": rec.Outcome.String()}
	if rec.Allowed {
		res["upstream"] = rec.Upstream
	}
	if rec.Err != nil {
		res["error"] = true
	}
	d := Decision{
		ID: newID(), Path: PathGrant, Time: rec.Start, Method: rec.Method, Tool: rec.Name,
		Result:  res,
		Metrics: map[string]any{"timer_toolgate_catalog_ns": rec.Duration.Nanoseconds()},
	}
	if rec.Caller != nil {
		d.Subject, d.Roles = rec.Caller.Subject, rec.Caller.Roles
	}
	d.TraceID, d.SpanID = traceOf(ctx)
	if rec.Revision != nil {
		d.Revision = rec.Revision.String()
	}
	l.Log(d)
}

// observeCall logs the grant decision of a call, and its call decision
// when it reached step 5 or failed at step 3.
func (l *Logger) observeCall(ctx context.Context, call *hooks.CallContext, rec *hooks.Record) {
	if l == nil {
		return
	}
	d := Decision{Time: call.Start, Method: "tools/call", Tool: call.Name, Arguments: call.Arguments}
	d.TraceID, d.SpanID = traceOf(ctx)
	if call.Caller != nil {
		d.Subject, d.Roles = call.Caller.Subject, call.Caller.Roles
	}
	if call.Revision != nil {
		d.Revision = call.Revision.String()
	}
	if meta, err := call.Meta.MarshalJSON(); err == nil {
		d.Meta = meta
	}
	if rec.History != nil {
		d.History, d.HistoryEntries = rec.History.JSON(), rec.History.Entries()
	}
	grant := d
	grant.ID, grant.Path = call.DecisionID+"-grant", PathGrant
	grant.Result = map[string]any{"granted": rec.Grant.Granted, "outcome": rec.Grant.Outcome.String()}
	grant.Metrics = map[string]any{"timer_toolgate_grant_ns": rec.GrantTime.Nanoseconds()}
	grant.Custom = map[string]any{"call_decision_id": call.DecisionID}
	l.Log(grant)
	if rec.Stage == toolcall.StageUnknown {
		return // step 4: hidden is absent, no call decision
	}

	d.ID, d.Path = call.DecisionID, PathCall
	res := map[string]any{"outcome": string(rec.Outcome), "stage": string(rec.Stage)}
	if reasons := rec.Reasons(); len(reasons) > 0 {
		res["reasons"] = reasons
	}
	if rules := rec.DecidingRules(); len(rules) > 0 {
		where := make([]string, len(rules))
		for i, loc := range rules {
			where[i] = loc.String()
		}
		res["rules"] = where
	}
	if by := rec.AnsweredBy(); by != "" {
		res["answered_by"] = by
	}
	if rec.ApprovalID != "" {
		res["approval_id"] = rec.ApprovalID
	}
	if rec.ApprovedBy != "" {
		res["approved_by"] = rec.ApprovedBy
	}
	if rec.Result != nil && rec.Result.IsError {
		res["is_error"] = true
	}
	d.Result = res
	d.Metrics = map[string]any{
		"timer_toolgate_call_ns":     rec.Duration.Nanoseconds(),
		"timer_toolgate_decision_ns": rec.Decision().Nanoseconds(),
		"timer_toolgate_grant_ns":    rec.GrantTime.Nanoseconds(),
		"timer_toolgate_rules_ns":    rec.RulesTime.Nanoseconds(),
		"timer_toolgate_method_ns":   rec.MethodTime.Nanoseconds(),
	}
	l.Log(d)
}

// observeList logs the grant decision of a listing; its result is the
// names listed, and for a failed decision what the listing fell back to.
func (l *Logger) observeList(ctx context.Context, lr *hooks.ListRecord) {
	if l == nil {
		return
	}
	res := map[string]any{"listed": lr.Listed, "outcome": lr.Outcome.String()}
	if lr.Outcome == toolcall.GrantFailed {
		res["fallback"] = "base"
		if lr.Fallback == hooks.ListFallbackNone {
			res["fallback"] = "none"
		}
	}
	d := Decision{
		ID: newID(), Path: PathGrant, Time: lr.Start, Method: "tools/list",
		Subject: lr.Caller.Subject, Roles: lr.Caller.Roles,
		Result:  res,
		Metrics: map[string]any{"timer_toolgate_list_ns": lr.Duration.Nanoseconds()},
	}
	d.TraceID, d.SpanID = traceOf(ctx)
	if lr.Revision != nil {
		d.Revision = lr.Revision.String()
	}
	if meta, err := lr.Meta.MarshalJSON(); err == nil {
		d.Meta = meta
	}
	l.Log(d)
}

// traceOf is the W3C trace and span id of the span in ctx, "" when none.
func traceOf(ctx context.Context) (traceID, spanID string) {
	sc := trace.SpanContextFromContext(ctx)
	if sc.HasTraceID() {
		traceID = sc.TraceID().String()
	}
	if sc.HasSpanID() {
		spanID = sc.SpanID().String()
	}
	return traceID, spanID
}

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
