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
	reg      *prometheus.Registry
	calls    *prometheus.CounterVec
	duration prometheus.Histogram
	decision prometheus.Histogram
	counters [numCounters]prometheus.Counter
	families [numFamilies]*prometheus.CounterVec
}

// counter names one of the counters without labels, each counted by a
// method of its own through inc.
type counter int

const (
	reloads counter = iota
	reloadFailures
	replays
	conflicts
	auditDropped
	numCounters
)

// family names one of the counters by a label, each counted by a method of
// its own through incBy.
type family int

const (
	upstreamDrift family = iota
	approvals
	webhook
	streams
	limited
	numFamilies
)

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
		counters: [numCounters]prometheus.Counter{
			reloads:        newCounter("toolgate_reloads_total", "Reloads of registry and policies that built and swapped in a new revision."),
			reloadFailures: newCounter("toolgate_reload_failures_total", "Reloads refused (did not compile or validate); the last good revision kept serving."),
			replays:        newCounter("toolgate_ledger_replays_total", "Calls answered with the stored result of a completed idempotency key."),
			conflicts:      newCounter("toolgate_ledger_conflicts_total", "Calls refused because their idempotency key was used with different arguments."),
			auditDropped:   newCounter("toolgate_audit_dropped_total", "Audit records dropped: buffer full, writer failed, or auditor closed."),
		},
		families: [numFamilies]*prometheus.CounterVec{
			upstreamDrift: newFamily("toolgate_upstream_drift_total", "Definitions of a pinned upstream's tools seen not matching their pin (drifted or new), each not served; counted once per definition.", "upstream"),
			approvals:     newFamily("toolgate_approvals_total", "Approval requests by state change: requested, approved, refused, consumed, expired.", "state"),
			webhook:       newFamily("toolgate_approval_webhook_total", "Approval webhook outcomes: events sent, events failed after every attempt, requests coalesced into a summary (the queue was full).", "result"),
			streams:       newFamily("toolgate_http_streams_total", "Long-lived HTTP streams refused (nobody, per_caller, per_address) or closed to make room for newer ones (closed_oldest).", "event"),
			limited:       newFamily("toolgate_limited_total", "tools/call requests a rate limit or quota refused (docs/contract.md §18), by tool.", "tool"),
		},
	}
	for _, r := range []string{"sent", "failed", "coalesced"} {
		m.families[webhook].WithLabelValues(r)
	}
	for _, e := range []string{"nobody", "per_caller", "per_address", "closed_oldest"} {
		m.families[streams].WithLabelValues(e)
	}
	for _, s := range approvalStates {
		m.families[approvals].WithLabelValues(s)
	}
	for _, o := range toolcall.Outcomes {
		m.calls.WithLabelValues(string(o))
	}
	m.reg.MustRegister(m.calls, m.duration, m.decision)
	for _, c := range m.counters {
		m.reg.MustRegister(c)
	}
	for _, f := range m.families {
		m.reg.MustRegister(f)
	}
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
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
func (m *Metrics) Approval(state string) { m.incBy(approvals, state) }

// ApprovalWebhook counts one outcome of the approval webhook; an
// approvals.WebhookOptions.OnResult.
func (m *Metrics) ApprovalWebhook(result string) { m.incBy(webhook, result) }

// Stream counts a stream refused or closed to make room; an
// httpserve.Options.OnStream.
func (m *Metrics) Stream(event string) { m.incBy(streams, event) }

// Limited counts one call a rate limit refused, by its tool (a registry
// row's name: only accepted calls reach the limits).
func (m *Metrics) Limited(tool string) { m.incBy(limited, tool) }

// ReloadOK counts a reload that swapped in a new revision.
func (m *Metrics) ReloadOK() { m.inc(reloads) }

// ReloadFailed counts a reload that was refused.
func (m *Metrics) ReloadFailed() { m.inc(reloadFailures) }

// LedgerReplay counts a call answered from the ledger (ledger.Options.OnReplay).
func (m *Metrics) LedgerReplay() { m.inc(replays) }

// LedgerConflict counts a ledger conflict refusal (ledger.Options.OnConflict).
func (m *Metrics) LedgerConflict() { m.inc(conflicts) }

// AuditDropped counts a dropped audit record (audit.Options.OnDrop).
func (m *Metrics) AuditDropped() { m.inc(auditDropped) }

// UpstreamDrift counts one definition of the upstream's tool that does not
// match its pin (docs/contract.md §15).
func (m *Metrics) UpstreamDrift(upstream string) { m.incBy(upstreamDrift, upstream) }

func newCounter(name, help string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
}

func newFamily(name, help, label string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{label})
}

// inc adds one to c; a no-op on a nil *Metrics.
func (m *Metrics) inc(c counter) {
	if m != nil {
		m.counters[c].Inc()
	}
}

// incBy adds one to f's series for label; a no-op on a nil *Metrics.
func (m *Metrics) incBy(f family, label string) {
	if m != nil {
		m.families[f].WithLabelValues(label).Inc()
	}
}
