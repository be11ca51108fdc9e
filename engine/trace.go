package engine

import (
	"context"

	"github.com/toolgate/toolgate/toolcall"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// The spans a decision makes when the context carries a recording span
// (tracing on, docs/contract.md §14): a child of that span per grant decision and per
// evaluation of the toolgate.call rules. With tracing off the cost is one
// context lookup per decision.
const (
	// SpanGrant is a grant decision's span; AttrGrant says whether the
	// decision came from the cache (GrantCached) or was evaluated
	// (GrantEvaluated), AttrGrantOutcome its Outcome.
	SpanGrant        = "toolgate.grant"
	AttrGrant        = "toolgate.grant"
	AttrGrantOutcome = "toolgate.grant.outcome"
	GrantCached      = "cached"
	GrantEvaluated   = "evaluated"
	// SpanRules is the toolgate.call rules' span; AttrRulesDenied counts
	// their deny reasons.
	SpanRules       = "toolgate.call_rules"
	AttrRulesDenied = "toolgate.call_rules.denied"
)

// traceScope is the instrumentation scope of the engine's spans.
const traceScope = "github.com/toolgate/toolgate/engine"

// recordingSpan returns the span in ctx when it records and is not already
// the step's own (the traced path calls the untraced one through it).
func recordingSpan(ctx context.Context, step string) trace.Span {
	s := trace.SpanFromContext(ctx)
	if !s.IsRecording() {
		return nil
	}
	if n, ok := s.(interface{ Name() string }); ok && n.Name() == step {
		return nil
	}
	return s
}

// tracedGrant is Grant inside a SpanGrant child of parent.
func (r *Revision) tracedGrant(ctx context.Context, parent trace.Span, c *toolcall.Caller, req Request) *GrantDecision {
	cached := false
	if dc := r.decisions; dc != nil {
		var buf [192]byte
		cached = dc.Get(c.AppendFingerprint(buf[:0])) != nil
	}
	ctx, s := parent.TracerProvider().Tracer(traceScope).Start(ctx, SpanGrant)
	defer s.End()
	d := r.Grant(ctx, c, req)
	how := GrantEvaluated
	if cached && d.Outcome != Failed {
		how = GrantCached
	}
	s.SetAttributes(attribute.String(AttrGrant, how), attribute.String(AttrGrantOutcome, d.Outcome.String()))
	if d.Outcome == Failed {
		s.SetAttributes(attribute.String("error.type", "grant_failed"))
	}
	return d
}

// tracedCall is Call inside a SpanRules child of parent.
func (r *Revision) tracedCall(ctx context.Context, parent trace.Span, c *toolcall.Caller, req Request) *CallDecision {
	ctx, s := parent.TracerProvider().Tracer(traceScope).Start(ctx, SpanRules)
	defer s.End()
	d := r.Call(ctx, c, req)
	s.SetAttributes(attribute.Int(AttrRulesDenied, len(d.Deny)))
	if d.Err != nil {
		s.SetAttributes(attribute.String("error.type", "rules_failed"))
	}
	return d
}
