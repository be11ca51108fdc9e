package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/toolcall"
)

func TestAuditRecordCarriesTheTraceID(t *testing.T) {
	t.Parallel()
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	traced := trace.ContextWithSpanContext(context.Background(),
		trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled}))
	var buf bytes.Buffer // written by the auditor's goroutine, read after Close
	a := New(&buf, Options{})
	call := &hooks.CallContext{DecisionID: "d-1", Name: "echo", Arguments: json.RawMessage(`{}`), Start: time.Now()}
	end := &hooks.Record{Outcome: toolcall.OutcomeResult}
	h := a.Hook()
	if err := h.After(traced, call, end); err != nil {
		t.Fatal(err)
	}
	if err := h.After(context.Background(), call, end); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n"))
	if len(lines) != 2 {
		t.Fatalf("%d lines", len(lines))
	}
	var withTrace, without map[string]any
	if err := json.Unmarshal(lines[0], &withTrace); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(lines[1], &without); err != nil {
		t.Fatal(err)
	}
	if withTrace["trace_id"] != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("traced record: trace_id %v", withTrace["trace_id"])
	}
	if _, ok := without["trace_id"]; ok {
		t.Errorf("untraced record has a trace_id: %s", lines[1])
	}
}
