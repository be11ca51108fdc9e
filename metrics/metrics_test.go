package metrics_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/hooks/audit"
	"github.com/toolgate/toolgate/hooks/ledger"
	"github.com/toolgate/toolgate/internal/server/approvals"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/metrics"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/store"
	"github.com/toolgate/toolgate/toolcall"
)

func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	return fams
}

func counter(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	f, ok := fams[name]
	require.True(t, ok, "no metric %s", name)
	for _, m := range f.Metric {
		match := true
		for i := 0; i+1 < len(labels); i += 2 {
			found := false
			for _, l := range m.Label {
				if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
					found = true
				}
			}
			match = match && found
		}
		if match {
			return m.GetCounter().GetValue()
		}
	}
	t.Fatalf("no series %s%v", name, labels)
	return 0
}

// blocked is a writer whose Write never returns; entered closes at the first.
type blocked struct{ entered chan struct{} }

func (b blocked) Write([]byte) (int, error) {
	close(b.entered)
	select {}
}

func TestMetricsEndpoint(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()

	fams := scrape(t, srv.URL)
	for _, o := range []string{"result", "answered", "denied", "failed", "refused_gate"} {
		require.Zero(t, counter(t, fams, "toolgate_calls_total", "outcome", o), o)
	}
	for _, n := range []string{"toolgate_reloads_total", "toolgate_reload_failures_total",
		"toolgate_ledger_replays_total", "toolgate_ledger_conflicts_total", "toolgate_audit_dropped_total"} {
		require.Zero(t, counter(t, fams, n), n)
	}
	require.Contains(t, fams, "go_goroutines")

	// Wire the ledger and an auditor whose writer blocks forever.
	l := ledger.New(store.NewMemoryStore(), ledger.Options{OnReplay: m.LedgerReplay, OnConflict: m.LedgerConflict})
	stuck := blocked{entered: make(chan struct{})}
	aud := audit.New(stuck, audit.Options{Buffer: 1, CloseTimeout: time.Millisecond, OnDrop: m.AuditDropped})
	hs := []hooks.Hook{l.Hook(), aud.Hook(), m.Hook()}
	call := func(args string) {
		c := &hooks.CallContext{
			DecisionID: "d", Name: "echo", Tool: &registry.Tool{Name: "echo", Method: "demo.echo"}, Method: "demo.echo",
			Arguments: json.RawMessage(args), Meta: engine.BoundMeta(json.RawMessage(`{"festi/idempotencyKey":"k"}`)),
			Caller: &toolcall.Caller{Subject: "alice"}, Start: time.Now(),
		}
		v, err := l.Hook().Before(context.Background(), c)
		require.NoError(t, err)
		end := &hooks.Record{Outcome: toolcall.OutcomeResult, Result: mcpadapter.TextResult("ok", false), Duration: 3 * time.Millisecond}
		switch {
		case v.Denied:
			end = &hooks.Record{Outcome: toolcall.OutcomeDenied, Denials: []hooks.Denial{{Reason: v.Reason}}, Duration: time.Millisecond}
		case v.Result != nil:
			end = &hooks.Record{Outcome: toolcall.OutcomeAnswered, Result: v.Result, Duration: time.Millisecond}
		}
		for _, h := range hs {
			require.NoError(t, h.After(context.Background(), c, end))
		}
	}
	call(`{"text":"a"}`) // result
	<-stuck.entered      // its audit record is stuck in Write
	call(`{"text":"a"}`) // replay
	call(`{"text":"a"}`) // replay
	call(`{"text":"b"}`) // conflict
	m.Hook().After(context.Background(), &hooks.CallContext{}, &hooks.Record{Outcome: toolcall.OutcomeRefusedGate, Err: errors.New("grant decision failed"), Duration: time.Second, GrantTime: 2 * time.Millisecond})
	m.ReloadOK()
	m.ReloadOK()
	m.ReloadFailed()
	aud.Close()

	fams = scrape(t, srv.URL)
	for o, want := range map[string]float64{"result": 1, "answered": 2, "denied": 1, "failed": 0, "refused_gate": 1} {
		require.Equal(t, want, counter(t, fams, "toolgate_calls_total", "outcome", o), o)
	}
	require.Equal(t, 2.0, counter(t, fams, "toolgate_reloads_total"))
	require.Equal(t, 1.0, counter(t, fams, "toolgate_reload_failures_total"))
	require.Equal(t, 2.0, counter(t, fams, "toolgate_ledger_replays_total"))
	require.Equal(t, 1.0, counter(t, fams, "toolgate_ledger_conflicts_total"))
	// 4 records: one stuck in Write, one buffered (dropped at Close), two dropped at once.
	require.Equal(t, 3.0, counter(t, fams, "toolgate_audit_dropped_total"))
	require.EqualValues(t, aud.Dropped(), 3)

	h := fams["toolgate_call_duration_seconds"].Metric[0].GetHistogram()
	require.EqualValues(t, 5, h.GetSampleCount())
	require.InDelta(t, 0.003+0.001*3+1, h.GetSampleSum(), 1e-9)
	d := fams["toolgate_decision_duration_seconds"].Metric[0].GetHistogram()
	require.EqualValues(t, 5, d.GetSampleCount())
	require.InDelta(t, 0.002, d.GetSampleSum(), 1e-9, "the Decision part of the calls")
}

func TestNilMetricsIsANoOp(t *testing.T) {
	t.Parallel()
	var m *metrics.Metrics
	m.ReloadOK()
	m.ReloadFailed()
	m.LedgerReplay()
	m.LedgerConflict()
	m.AuditDropped()
	require.NoError(t, m.Hook().After(context.Background(), &hooks.CallContext{}, &hooks.Record{}))
}

func TestHandlerServesTextFormat(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	m.Handler().ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.Code)
	require.True(t, bytes.Contains(rec.Body.Bytes(), []byte("# TYPE toolgate_calls_total counter")))
}

// TestHookIsPrompt: counting a call never waits, so the metrics hook asks
// to run without the hook deadline's goroutine and timer.
func TestHookIsPrompt(t *testing.T) {
	t.Parallel()
	require.True(t, metrics.New().Hook().Prompt)
}

// TestApprovalWebhookCounted: the approval webhook's outcomes, wired as
// the gateway wires them (WebhookOptions.OnResult: Metrics.ApprovalWebhook),
// reach /metrics as toolgate_approval_webhook_total{result}: events sent,
// and requests coalesced when the queue was full (docs/contract.md §13:
// what the webhook could not send one by one is counted, not dropped
// silently).
func TestApprovalWebhookCounted(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	first, release := make(chan struct{}), make(chan struct{})
	got := make(chan struct{}, 8)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev approvals.WebhookEvent
		_ = json.NewDecoder(r.Body).Decode(&ev)
		if ev.ID == "r0" {
			close(first)
			<-release
		}
		got <- struct{}{}
	}))
	defer hook.Close()
	wh := approvals.NewWebhook(hook.URL, approvals.WebhookOptions{Queue: 1, OnResult: m.ApprovalWebhook})
	wh.Notify(approvals.Request{ID: "r0", Subject: "alice", Tool: "wipe"})
	<-first // r0 is being sent; the queue holds one more
	for i := 1; i <= 4; i++ {
		wh.Notify(approvals.Request{ID: "r" + string(rune('0'+i)), Subject: "alice", Tool: "wipe"})
	}
	close(release)
	defer wh.Close()
	for range 3 { // r0, r1 and the summary of r2, r3, r4
		<-got
	}
	// The third is counted once its answer is read, after the handler ran.
	require.Eventually(t, func() bool {
		return counter(t, scrape(t, srv.URL), "toolgate_approval_webhook_total", "result", approvals.WebhookSent) == 3
	}, time.Minute, time.Millisecond)
	fams := scrape(t, srv.URL)
	require.Equal(t, 3.0, counter(t, fams, "toolgate_approval_webhook_total", "result", approvals.WebhookCoalesced))
}
