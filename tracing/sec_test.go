package tracing_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/tracing"
)

// TestToolNameBoundedInSpans: the tool name of a tools/call is the
// client's, sent before anyone is known (nobody's calls are traced too).
// A name no row can have (the registry's rule: 1 to 128 letters, digits,
// "_", "." or "-") is neither in the span's name nor an attribute, so an
// anonymous client cannot make each queued span megabytes long: a span's
// size stays fixed whatever the request.
func TestToolNameBoundedInSpans(t *testing.T) {
	t.Parallel()
	tr, exp := newInMemory(t)
	for _, name := range []string{strings.Repeat("a", 1<<20), strings.Repeat("b", 129), "evil\nname", "a b"} {
		_, s := tr.StartRequest(context.Background(), tracing.Request{Method: "tools/call", Tool: name})
		s.End()
	}
	_, s := tr.StartRequest(context.Background(), tracing.Request{Method: "tools/call", Tool: "demo.get-Reward_2"})
	s.End()
	spans := exp.GetSpans()
	if len(spans) != 5 {
		t.Fatalf("%d spans, want 5", len(spans))
	}
	for _, sp := range spans[:4] {
		if sp.Name != "tools/call" {
			t.Errorf("span name of %d bytes, want %q for a name no row can have", len(sp.Name), "tools/call")
		}
		for _, kv := range sp.Attributes {
			if len(kv.Value.String()) > 128 {
				t.Errorf("attribute %s of %d bytes", kv.Key, len(kv.Value.String()))
			}
		}
	}
	if got := spans[4].Name; got != "tools/call demo.get-Reward_2" {
		t.Errorf("span name %q, want the tool's", got)
	}
	if got := attrs(spans[4])["gen_ai.tool.name"]; got != "demo.get-Reward_2" {
		t.Errorf("gen_ai.tool.name %q", got)
	}
}

// TestUnknownToolNameNotInSpans: a name that fits the registry's rule but
// names no row (anyone may send one, nobody included) does not name the
// span either, so a client cannot mint span names without end (a tracing
// backend indexes them: cardinality).
func TestUnknownToolNameNotInSpans(t *testing.T) {
	t.Parallel()
	tr, exp := newInMemory(t)
	isRow := func(name string) bool { return name == "getReward" }
	h := tr.MiddlewareOf(nil, isRow)(func(context.Context, string, mcp.Request) (mcp.Result, error) {
		return &mcp.CallToolResult{}, nil
	})
	for _, name := range []string{"x7f3a9c1", "getReward"} {
		if _, err := h(context.Background(), "tools/call", &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	spans := exp.GetSpans()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2", len(spans))
	}
	if spans[0].Name != "tools/call" || attrs(spans[0])["gen_ai.tool.name"] != "" {
		t.Errorf("a name no row has: span %q, gen_ai.tool.name %q", spans[0].Name, attrs(spans[0])["gen_ai.tool.name"])
	}
	if spans[1].Name != "tools/call getReward" || attrs(spans[1])["gen_ai.tool.name"] != "getReward" {
		t.Errorf("a row's name: span %q, gen_ai.tool.name %q", spans[1].Name, attrs(spans[1])["gen_ai.tool.name"])
	}
}

// TestClientTraceContextLinkedNotContinuedByDefault: unless the Tracer trusts incoming trace context, a client's
// traceparent (in _meta or the HTTP header) does not choose the trace id
// that spans, audit and decision logs record, nor its sampling: the span
// is the root of a trace of toolgate's own, linked to the client's.
func TestClientTraceContextLinkedNotContinuedByDefault(t *testing.T) {
	t.Parallel()
	tr, exp := newInMemoryWith(t, tracing.Options{})
	for _, r := range []tracing.Request{
		{Method: "tools/call", Tool: "getReward", TraceParent: traceparent},
		{Method: "tools/list", Header: http.Header{"Traceparent": {headerTP}}},
	} {
		ctx, s := tr.StartRequest(context.Background(), r)
		if got := tracing.TraceID(ctx); got == clientTrace || got == headerTrace || got == "" {
			t.Errorf("%s: trace id %q, want one of toolgate's own", r.Method, got)
		}
		s.End()
	}
	spans := exp.GetSpans()
	if len(spans) != 2 {
		t.Fatalf("%d spans", len(spans))
	}
	for i, want := range []string{clientTrace, headerTrace} {
		s := spans[i]
		if s.Parent.IsValid() {
			t.Errorf("%s: parent %v, want a root", s.Name, s.Parent.SpanID())
		}
		if len(s.Links) != 1 || s.Links[0].SpanContext.TraceID().String() != want {
			t.Errorf("%s: links %v, want the client's trace %s", s.Name, s.Links, want)
		}
	}
}
