// Package metrics exposes toolgate's Prometheus metrics at /metrics: calls
// by outcome and their latency from an after hook, and counters that the
// engine's reloads, the ledger and the audit trail report through plain
// methods, so that none of those packages imports this one.
//
//	m := metrics.New()
//	adapter.AddHook(m.Hook())
//	l := ledger.New(store, ledger.Options{OnReplay: m.LedgerReplay, OnConflict: m.LedgerConflict})
//	a := audit.New(os.Stderr, audit.Options{OnDrop: m.AuditDropped})
//	mux.Handle("/metrics", m.Handler())
//
// All methods are safe for concurrent use, and no-ops on a nil *Metrics.
package metrics

import (
	"context"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/toolcall"
)

// HookName is the name the metrics hook registers under.
const HookName = "metrics"

// Metrics holds toolgate's collectors in their own registry, together with
// the Go runtime and process collectors.
type Metrics struct {
	reg            *prometheus.Registry
	calls          *prometheus.CounterVec
	duration       prometheus.Histogram
	decision       prometheus.Histogram
	reloads        prometheus.Counter
	reloadFailures prometheus.Counter
	replays        prometheus.Counter
	conflicts      prometheus.Counter
	auditDropped   prometheus.Counter
	upstreamDrift  *prometheus.CounterVec
	approvals      *prometheus.CounterVec
	webhook        *prometheus.CounterVec
	streams        *prometheus.CounterVec
	limited        *prometheus.CounterVec
}

// New returns Metrics with every series registered (at zero).
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolgate_calls_total",
			Help: "tools/call requests that reached the before hooks or were refused by a failing grant decision, by outcome.",
		}, []string{"outcome"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "toolgate_call_duration_seconds",
			Help:    "Wall-clock time of those calls, from receipt to the answer (decisions, hooks and the method).",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}),
		decision: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "toolgate_decision_duration_seconds",
			Help:    "Time those calls spent in policy decisions: the grant decision and the toolgate.call rules.",
			Buckets: []float64{.000001, .000005, .00001, .00005, .0001, .0005, .001, .0025, .005, .01, .025, .05, .1, .25},
		}),
		reloads: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "toolgate_reloads_total",
			Help: "Reloads of registry and policies that built and swapped in a new revision.",
		}),
		reloadFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "toolgate_reload_failures_total",
			Help: "Reloads refused (did not compile or validate); the last good revision kept serving.",
		}),
		replays: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "toolgate_ledger_replays_total",
			Help: "Calls answered with the stored result of a completed idempotency key.",
		}),
		conflicts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "toolgate_ledger_conflicts_total",
			Help: "Calls refused because their idempotency key was used with different arguments.",
		}),
		auditDropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "toolgate_audit_dropped_total",
			Help: "Audit records dropped: buffer full, writer failed, or auditor closed.",
		}),
		upstreamDrift: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolgate_upstream_drift_total",
			Help: "Definitions of a pinned upstream's tools seen not matching their pin (drifted or new), each not served; counted once per definition.",
		}, []string{"upstream"}),
		approvals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolgate_approvals_total",
			Help: "Approval requests by state change: requested, approved, refused, consumed, expired.",
		}, []string{"state"}),
		webhook: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolgate_approval_webhook_total",
			Help: "Approval webhook outcomes: events sent, events failed after every attempt, requests coalesced into a summary (the queue was full).",
		}, []string{"result"}),
		streams: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolgate_http_streams_total",
			Help: "Long-lived HTTP streams refused (nobody, per_caller, per_address) or closed to make room for newer ones (closed_oldest).",
		}, []string{"event"}),
		limited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolgate_limited_total",
			Help: "tools/call requests a rate limit or quota refused (docs/contract.md §18), by tool.",
		}, []string{"tool"}),
	}
	for _, r := range []string{"sent", "failed", "coalesced"} {
		m.webhook.WithLabelValues(r)
	}
	for _, e := range []string{"nobody", "per_caller", "per_address", "closed_oldest"} {
		m.streams.WithLabelValues(e)
	}
	for _, s := range approvalStates {
		m.approvals.WithLabelValues(s)
	}
	for _, o := range toolcall.Outcomes {
		m.calls.WithLabelValues(string(o))
	}
	m.reg.MustRegister(m.calls, m.duration, m.decision, m.reloads, m.reloadFailures, m.replays, m.conflicts, m.auditDropped, m.upstreamDrift, m.approvals, m.webhook, m.streams, m.limited,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Registry is the registry the metrics live in, for registering more.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the metrics in the Prometheus exposition formats.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Hook returns the after hook counting calls by outcome and observing
// their duration, named HookName. It is Prompt: it only updates counters.
func (m *Metrics) Hook() hooks.Hook {
	return hooks.Hook{Name: HookName, Prompt: true, After: func(_ context.Context, call *hooks.CallContext, end *hooks.Record) error {
		m.ObserveCall(end.Outcome, end.Duration.Seconds())
		if end.Outcome == toolcall.OutcomeLimited {
			m.Limited(call.Name)
		}
		if m != nil {
			m.decision.Observe(end.Decision().Seconds())
		}
		return nil
	}}
}

// ObserveCall counts one call with its outcome and duration in seconds.
func (m *Metrics) ObserveCall(outcome toolcall.Outcome, seconds float64) {
	if m == nil {
		return
	}
	m.calls.WithLabelValues(string(outcome)).Inc()
	m.duration.Observe(seconds)
}

// approvalStates are the states of toolgate_approvals_total, the
// hooks/approvals State constants (listed here: metrics does not import
// the hooks).
var approvalStates = []string{"requested", "approved", "refused", "consumed", "expired"}

// Approval counts one state change of an approval request; an
// approvals.Options.OnState.
func (m *Metrics) Approval(state string) {
	if m == nil {
		return
	}
	m.approvals.WithLabelValues(state).Inc()
}

// ApprovalWebhook counts one outcome of the approval webhook; an
// approvals.WebhookOptions.OnResult.
func (m *Metrics) ApprovalWebhook(result string) {
	if m == nil {
		return
	}
	m.webhook.WithLabelValues(result).Inc()
}

// Stream counts a stream refused or closed to make room; an
// httpserve.Options.OnStream.
func (m *Metrics) Stream(event string) {
	if m == nil {
		return
	}
	m.streams.WithLabelValues(event).Inc()
}

// Limited counts one call a rate limit refused, by its tool (a registry
// row's name: only accepted calls reach the limits).
func (m *Metrics) Limited(tool string) {
	if m == nil {
		return
	}
	m.limited.WithLabelValues(tool).Inc()
}

// ReloadOK counts a reload that swapped in a new revision.
func (m *Metrics) ReloadOK() {
	if m != nil {
		m.reloads.Inc()
	}
}

// ReloadFailed counts a reload that was refused.
func (m *Metrics) ReloadFailed() {
	if m != nil {
		m.reloadFailures.Inc()
	}
}

// LedgerReplay counts a call answered from the ledger (ledger.Options.OnReplay).
func (m *Metrics) LedgerReplay() {
	if m != nil {
		m.replays.Inc()
	}
}

// LedgerConflict counts a ledger conflict refusal (ledger.Options.OnConflict).
func (m *Metrics) LedgerConflict() {
	if m != nil {
		m.conflicts.Inc()
	}
}

// AuditDropped counts a dropped audit record (audit.Options.OnDrop).
func (m *Metrics) AuditDropped() {
	if m != nil {
		m.auditDropped.Inc()
	}
}

// UpstreamDrift counts one definition of the upstream's tool that does not
// match its pin (docs/contract.md §15).
func (m *Metrics) UpstreamDrift(upstream string) {
	if m == nil {
		return
	}
	m.upstreamDrift.WithLabelValues(upstream).Inc()
}
