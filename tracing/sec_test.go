package tracing_test

import (
	"context"
	"strings"
	"testing"

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
			if len(kv.Value.Emit()) > 128 {
				t.Errorf("attribute %s of %d bytes", kv.Key, len(kv.Value.Emit()))
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
