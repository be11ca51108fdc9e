package decisionlog_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/plugins/logs"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/toolgate/toolgate/decisionlog"
)

// deadline bounds every wait for the background goroutine; it is a failure
// bound, never a synchronisation.
const deadline = 10 * time.Second

// opaSink is a loopback decision-log service: it decodes each upload the
// way an OPA-compatible sink does, with OPA's own event type, and refuses
// anything else.
type opaSink struct {
	t       *testing.T
	fail    atomic.Int32 // answer 500 to this many more uploads
	uploads atomic.Int32
	batches chan []logs.EventV1
}

func newOPASink(t *testing.T) (*opaSink, *httptest.Server) {
	s := &opaSink{t: t, batches: make(chan []logs.EventV1, 100)}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv
}

func (s *opaSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.uploads.Add(1)
	if s.fail.Add(-1) >= 0 {
		http.Error(w, "try later", http.StatusInternalServerError)
		return
	}
	if r.Method != http.MethodPost || r.Header.Get("Content-Encoding") != "gzip" || r.Header.Get("Content-Type") != "application/json" {
		s.t.Errorf("upload %s with Content-Encoding %q, Content-Type %q", r.Method, r.Header.Get("Content-Encoding"), r.Header.Get("Content-Type"))
		http.Error(w, "bad upload", http.StatusBadRequest)
		return
	}
	zr, err := gzip.NewReader(r.Body)
	if err != nil {
		s.t.Errorf("upload is not gzip: %v", err)
		return
	}
	body, err := io.ReadAll(zr)
	if err != nil {
		s.t.Errorf("upload: %v", err)
		return
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields() // every field toolgate sends is one of OPA's
	var events []logs.EventV1
	if err := dec.Decode(&events); err != nil {
		s.t.Errorf("upload does not decode as []logs.EventV1: %v\n%s", err, body)
		http.Error(w, "bad upload", http.StatusBadRequest)
		return
	}
	s.batches <- events
	w.WriteHeader(http.StatusOK)
}

// receive collects uploaded events until n arrived.
func (s *opaSink) receive(t *testing.T, n int) []logs.EventV1 {
	t.Helper()
	var got []logs.EventV1
	timer := time.NewTimer(deadline)
	defer timer.Stop()
	for len(got) < n {
		select {
		case b := <-s.batches:
			got = append(got, b...)
		case <-timer.C:
			t.Fatalf("received %d of %d events", len(got), n)
		}
	}
	return got
}

func callDecision(id string) decisionlog.Decision {
	return decisionlog.Decision{
		ID: id, Path: decisionlog.PathCall,
		Time:     time.Date(2026, 12, 1, 12, 0, 0, 123456789, time.FixedZone("CET", 3600)),
		Revision: "3/abcdef0", Subject: "alice", Roles: []string{"manager"},
		Method: "tools/call", Tool: "getReward",
		Arguments: json.RawMessage(`{"idReward": 7, "note": "private words"}`),
		Meta:      json.RawMessage(`{"festi/runId":"r-1"}`),
		Result:    map[string]any{"outcome": "result"},
		Metrics:   map[string]any{"timer_toolgate_decision_ns": 1200},
		TraceID:   "4bf92f3577b34da6a3ce929d0e0e4736", SpanID: "00f067aa0ba902b7",
	}
}

func TestUploadDecodesWithOPAEventV1(t *testing.T) {
	t.Parallel()
	sink, srv := newOPASink(t)
	l, err := decisionlog.Open(srv.URL+"/logs", decisionlog.Options{
		Labels:        map[string]string{"id": "replica-1", "version": "test"},
		FlushInterval: time.Hour, // only Close flushes: it must
	})
	if err != nil {
		t.Fatal(err)
	}
	l.Log(decisionlog.Decision{ID: "g-1", Path: decisionlog.PathGrant, Revision: "3/abcdef0",
		Subject: "alice", Method: "tools/list", Result: []string{"getReward"}})
	l.Log(callDecision("c-1"))
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	got := sink.receive(t, 2)
	if len(got) != 2 || l.Written() != 2 || l.Dropped() != 0 {
		t.Fatalf("got %d events, written %d, dropped %d", len(got), l.Written(), l.Dropped())
	}
	g, c := got[0], got[1]
	if g.DecisionID != "g-1" || g.Path != "toolgate/grant/granted" || g.Timestamp.IsZero() {
		t.Errorf("grant event: %+v", g)
	}
	if c.DecisionID != "c-1" || c.Path != "toolgate/call" || c.Labels["id"] != "replica-1" ||
		c.Bundles["toolgate"].Revision != "3/abcdef0" || c.Revision != "3/abcdef0" ||
		c.TraceID != "4bf92f3577b34da6a3ce929d0e0e4736" || c.SpanID != "00f067aa0ba902b7" {
		t.Errorf("call event: %+v", c)
	}
	if want := time.Date(2026, 12, 1, 11, 0, 0, 123456789, time.UTC); !c.Timestamp.Equal(want) || c.Timestamp.Location() != time.UTC {
		t.Errorf("timestamp %v, want %v in UTC", c.Timestamp, want)
	}
	if c.Metrics["timer_toolgate_decision_ns"] != float64(1200) {
		t.Errorf("metrics %v", c.Metrics)
	}
	in := (*c.Input).(map[string]any)
	req := in["request"].(map[string]any)
	args := req["arguments"].(map[string]any)
	if args["idReward"] != decisionlog.SHA256([]byte("7")) || args["note"] != decisionlog.SHA256([]byte(`"private words"`)) {
		t.Errorf("arguments %v", args)
	}
	if req["tool"] != "getReward" || in["caller"].(map[string]any)["subject"] != "alice" {
		t.Errorf("input %v", in)
	}
	if (*c.Result).(map[string]any)["outcome"] != "result" {
		t.Errorf("result %v", *c.Result)
	}
}

func TestRetriesAfter500(t *testing.T) {
	t.Parallel()
	sink, srv := newOPASink(t)
	sink.fail.Store(2)
	l, err := decisionlog.Open(srv.URL, decisionlog.Options{
		BatchSize: 1,
		Backoff:   func(int) time.Duration { return time.Millisecond },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(context.Background())
	l.Log(callDecision("c-1"))
	got := sink.receive(t, 1)
	if got[0].DecisionID != "c-1" || sink.uploads.Load() != 3 || l.Dropped() != 0 {
		t.Fatalf("event %q after %d uploads, %d dropped", got[0].DecisionID, sink.uploads.Load(), l.Dropped())
	}
}

func TestDropsCountedWhenSinkDownAndBufferFull(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close() // the sink is down: every upload fails
	l, err := decisionlog.Open(srv.URL, decisionlog.Options{
		BufferSize: 2, BatchSize: 1,
		Backoff: func(int) time.Duration { return time.Millisecond },
	})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(l.Collectors()...)
	for i := range 5 {
		l.Log(callDecision(string(rune('a' + i))))
	}
	// A failing batch stays in the buffer, so exactly BufferSize events wait.
	if got := l.Dropped(); got != 3 {
		t.Fatalf("dropped %d, want 3", got)
	}
	if err := testutil.GatherAndCompare(reg, bytes.NewBufferString(`
# HELP toolgate_decision_log_dropped_total Decision-log events dropped: buffer full, logged after close, or unwritten at close.
# TYPE toolgate_decision_log_dropped_total counter
toolgate_decision_log_dropped_total 3
`), "toolgate_decision_log_dropped_total"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // give up at once: the two waiting are dropped too
	if err := l.Close(ctx); err == nil {
		t.Fatal("Close with unwritten events returned nil")
	}
	l.Log(callDecision("after close"))
	if got := l.Dropped(); got != 6 {
		t.Fatalf("dropped %d after close, want 6", got)
	}
}
