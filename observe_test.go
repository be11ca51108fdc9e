package toolgate_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/decisionlog"
	"github.com/toolgate/toolgate/example/demo"
	"github.com/toolgate/toolgate/internal/testkit/proctest"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/toolcall"
	"github.com/toolgate/toolgate/tracing"
)

// eventSink keeps the decision-log events it is given.
type eventSink struct {
	mu     sync.Mutex
	events []json.RawMessage
}

func (s *eventSink) Write(_ context.Context, events []json.RawMessage) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, events...)
	return nil
}

func (s *eventSink) Close() error { return nil }

// TestServerDecisionLogAndTracing: the front door's DecisionLog and Tracer
// options log every grant and call decision (a hidden tool's too) and trace
// each request, continuing the client's trace from _meta (trusted here), with the
// decision, hook and method spans; the call event carries the audit
// line's decision_id, and every event the trace id.
func TestServerDecisionLogAndTracing(t *testing.T) {
	t.Parallel()
	const clientTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	meta := mcp.Meta{"traceparent": "00-" + clientTrace + "-00f067aa0ba902b7-01"}
	ctx := context.Background()
	sink := &eventSink{}
	dl := decisionlog.New(sink, decisionlog.Options{})
	exp := tracetest.NewInMemoryExporter()
	tr, err := tracing.New(ctx, tracing.Options{Exporter: exp, Getenv: func(string) string { return "" }, TrustIncoming: true})
	require.NoError(t, err)
	trail := &proctest.Buffer{}
	s, err := toolgate.New(ctx, toolgate.Options{
		Methods:     demo.Methods(),
		Caller:      mcpadapter.StaticCaller(&toolcall.Caller{Subject: "max", Roles: []string{"manager"}}),
		Audit:       trail,
		DecisionLog: dl,
		Tracer:      tr,
	})
	require.NoError(t, err)

	ct, st := mcp.NewInMemoryTransports()
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, st) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, ct, nil)
	require.NoError(t, err)
	_, err = cs.ListTools(ctx, &mcp.ListToolsParams{Meta: meta})
	require.NoError(t, err)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "add", Arguments: map[string]any{"a": 1, "b": 2}, Meta: meta})
	require.NoError(t, err)
	require.False(t, res.IsError)
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "execUrl", Arguments: map[string]any{"url": "http://x"}, Meta: meta})
	require.NoError(t, err)
	require.Equal(t, "Error: Unknown tool 'execUrl'.", res.Content[0].(*mcp.TextContent).Text)
	require.NoError(t, cs.Close())
	<-served
	require.NoError(t, s.Close())
	require.NoError(t, dl.Close(ctx))
	got := exp.GetSpans() // exported as they end; Shutdown empties the exporter
	require.NoError(t, tr.Shutdown(ctx))

	var line struct {
		DecisionID string `json:"decision_id"`
		TraceID    string `json:"trace_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(trail.String())), &line), "one audit line: %s", trail.String())
	require.Equal(t, clientTrace, line.TraceID)

	sink.mu.Lock()
	defer sink.mu.Unlock()
	paths := map[string]int{}
	for _, raw := range sink.events {
		var e struct {
			DecisionID string `json:"decision_id"`
			Path       string `json:"path"`
			TraceID    string `json:"trace_id"`
		}
		require.NoError(t, json.Unmarshal(raw, &e))
		paths[e.Path]++
		require.Equal(t, clientTrace, e.TraceID, "%s", raw)
		if e.Path == decisionlog.PathCall {
			require.Equal(t, line.DecisionID, e.DecisionID)
		}
	}
	require.Equal(t, map[string]int{decisionlog.PathGrant: 3, decisionlog.PathCall: 1}, paths)

	spans := map[string]int{}
	for _, sp := range got {
		require.Equal(t, clientTrace, sp.SpanContext.TraceID().String(), sp.Name)
		spans[sp.Name]++
	}
	for name, n := range map[string]int{"tools/list": 1, "tools/call add": 1, "tools/call execUrl": 1, "toolgate.grant": 3, "toolgate.call_rules": 1, "toolgate.hook audit after": 1, "toolgate.method demo.add": 1} {
		require.Equal(t, n, spans[name], "span %q (spans: %v)", name, spans)
	}
}
