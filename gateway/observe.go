package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/decisionlog"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/internal/wire"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/metrics"
	"github.com/toolgate/toolgate/tracing"
)

// observeCloseTimeout bounds the flush of decision logs and spans at
// shutdown.
const observeCloseTimeout = 5 * time.Second

// observe is what SPEC §14 adds around served calls: OpenTelemetry spans
// (--otel-endpoint or OTEL_EXPORTER_OTLP_ENDPOINT) and OPA-shaped decision
// logs (--decision-log). Each is off unless configured, and then costs
// nothing: the wrappers return what they are given.
type observe struct {
	tr *tracing.Tracer
	dl *decisionlog.Logger // nil when off
}

// buildObserve opens tracing and the decision log (SPEC §14). It is New's
// first step, so that Close ends it last: what the calls traced and logged
// is flushed once everything else is done.
func (g *Gateway) buildObserve() error {
	obs, err := openObserve(g.ctx, &g.cfg.Serve, g.log, g.m)
	if err != nil {
		return err
	}
	g.obs = obs
	g.onClose(obs.Close)
	return nil
}

// openObserve starts the tracer and the decision logger the settings ask
// for; the decision log's drops are counted in m's registry.
func openObserve(ctx context.Context, s *config.Serve, log *slog.Logger, m *metrics.Metrics) (*observe, error) {
	tr, err := tracing.New(ctx, tracing.Options{Endpoint: s.OtelEndpoint, ServiceVersion: Version})
	if err != nil {
		return nil, err
	}
	o := &observe{tr: tr}
	if s.DecisionLog != "" {
		o.dl, err = decisionlog.Open(s.DecisionLog, decisionlog.Options{
			Labels: map[string]string{"id": newID(), "version": Version},
			Logger: log,
		})
		if err != nil {
			_ = tr.Shutdown(ctx)
			return nil, err
		}
		m.Registry().MustRegister(o.dl.Collectors()...)
	}
	if tr.Enabled() {
		log.Info("toolgate: tracing to OpenTelemetry (OTLP/HTTP)")
	}
	return o, nil
}

// Close writes what the decision log buffered and the spans not yet
// exported.
func (o *observe) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), observeCloseTimeout)
	defer cancel()
	return errors.Join(o.dl.Close(ctx), o.tr.Shutdown(ctx))
}

// methods returns ms with each method's run in its span.
func (o *observe) methods(ms mcpadapter.MethodSet) mcpadapter.MethodSet { return o.tr.WrapMethods(ms) }

// hook returns h with each half in its span.
func (o *observe) hook(h mcpadapter.Hook) mcpadapter.Hook { return o.tr.WrapHook(h) }

// install adds the decision-log hook to a and the middleware to s: the
// tools/list grant decisions' log, inside the tracing middleware (added
// last: it runs first, so every event and hook sees the request's span).
// Call it after a.NewServer and the other hooks.
func (o *observe) install(a *mcpadapter.Adapter, s *mcp.Server, caller mcpadapter.CallerFunc, revs mcpadapter.Revisions) {
	if o.dl != nil {
		a.AddHook(o.hook(mcpadapter.Hook{Name: "decision-log", After: o.logCall}))
		s.AddReceivingMiddleware(o.logList(caller, revs))
	}
	s.AddReceivingMiddleware(o.tr.Middleware(traceMeta))
}

// traceMeta reads the W3C trace context from a request's _meta as sent.
func traceMeta(req mcp.Request) (traceparent, tracestate string) {
	raw := wire.RawMeta(req)
	if raw == nil {
		return "", ""
	}
	var m struct {
		TraceParent string `json:"traceparent"`
		TraceState  string `json:"tracestate"`
	}
	_ = json.Unmarshal(raw, &m) // a _meta that is not an object has no trace context
	return m.TraceParent, m.TraceState
}

// logCall logs the grant decision and the call decision of a call that
// reached step 5 or was refused at step 3, from the call's Record.
func (o *observe) logCall(ctx context.Context, call *mcpadapter.CallContext, end *mcpadapter.Record) error {
	d := decisionlog.Decision{
		Time: call.Start, Method: "tools/call", Tool: call.Name, Arguments: call.Arguments,
		TraceID: tracing.TraceID(ctx), SpanID: tracing.SpanID(ctx),
	}
	if call.Caller != nil {
		d.Subject, d.Roles = call.Caller.Subject, call.Caller.Roles
	}
	if call.Revision != nil {
		d.Revision = call.Revision.String()
	}
	if meta, err := call.Meta.MarshalJSON(); err == nil {
		d.Meta = meta
	}
	grant := d
	grant.ID, grant.Path = call.DecisionID+"-grant", decisionlog.PathGrant
	grant.Result = map[string]any{"granted": end.Grant.Granted, "outcome": end.Grant.Outcome.String()}
	grant.Metrics = map[string]any{"timer_toolgate_grant_ns": end.GrantTime.Nanoseconds()}
	grant.Custom = map[string]any{"call_decision_id": call.DecisionID}
	o.dl.Log(grant)

	d.ID, d.Path = call.DecisionID, decisionlog.PathCall
	res := map[string]any{"outcome": string(end.Outcome), "stage": string(end.Stage)}
	if len(end.Reasons) > 0 {
		res["reasons"] = end.Reasons
	}
	if rules := end.DecidingRules(); len(rules) > 0 {
		where := make([]string, len(rules))
		for i, l := range rules {
			where[i] = l.String()
		}
		res["rules"] = where
	}
	if end.AnsweredBy != "" {
		res["answered_by"] = end.AnsweredBy
	}
	if end.ApprovalID != "" {
		res["approval_id"] = end.ApprovalID
	}
	if end.ApprovedBy != "" {
		res["approved_by"] = end.ApprovedBy
	}
	if end.Result != nil && end.Result.IsError {
		res["is_error"] = true
	}
	d.Result = res
	d.Metrics = map[string]any{
		"timer_toolgate_call_ns":     end.Duration.Nanoseconds(),
		"timer_toolgate_decision_ns": end.Decision.Nanoseconds(),
		"timer_toolgate_grant_ns":    end.GrantTime.Nanoseconds(),
		"timer_toolgate_rules_ns":    end.RulesTime.Nanoseconds(),
		"timer_toolgate_method_ns":   end.MethodTime.Nanoseconds(),
	}
	o.dl.Log(d)
	return nil
}

// logList is the middleware logging the grant decision of each tools/list
// a signed-in caller makes; its result is the names listed.
func (o *observe) logList(caller mcpadapter.CallerFunc, revs mcpadapter.Revisions) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "tools/list" {
				return next(ctx, method, req)
			}
			start := time.Now()
			rev := revs.Current()
			res, err := next(ctx, method, req)
			c := caller(ctx, req)
			if err != nil || c == nil {
				return res, err // nobody: no grant decision was asked
			}
			d := decisionlog.Decision{
				ID: newID(), Path: decisionlog.PathGrant, Time: start, Revision: rev.String(),
				Subject: c.Subject, Roles: c.Roles, Method: "tools/list",
				Result:  map[string]any{"listed": listedNames(res)},
				Metrics: map[string]any{"timer_toolgate_list_ns": time.Since(start).Nanoseconds()},
				TraceID: tracing.TraceID(ctx), SpanID: tracing.SpanID(ctx),
			}
			if meta, err := engine.BoundMeta(wire.RawMeta(req)).MarshalJSON(); err == nil {
				d.Meta = meta
			}
			o.dl.Log(d)
			return res, err
		}
	}
}

// listedNames are the names of the tools a tools/list result lists (the
// adapter's result type is its own: read through its JSON).
func listedNames(res mcp.Result) []string {
	b, err := json.Marshal(res)
	if err != nil {
		return []string{}
	}
	var l struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	_ = json.Unmarshal(b, &l)
	names := make([]string, len(l.Tools))
	for i, t := range l.Tools {
		names[i] = t.Name
	}
	return names
}

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
