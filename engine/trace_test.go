package engine_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/toolgate/toolgate/engine"
)

// Under a recording span, a grant decision is a child span saying whether
// it came from the cache, and the toolgate.call rules are one too.
func TestDecisionSpans(t *testing.T) {
	t.Parallel()
	e := newEngine(t, map[string]string{"call.rego": `package toolgate.call

deny contains "no notes" if input.request.arguments.note
`})
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())
	ctx, root := tp.Tracer("test").Start(context.Background(), "tools/call getReward")
	rev := e.Current()
	req := engine.Request{Method: engine.MethodCall, Tool: "getReward", Arguments: []byte(`{"idReward":1,"note":"x"}`)}
	for range 2 {
		require.NotNil(t, rev.Grant(ctx, alice, req))
	}
	cd := rev.Call(ctx, alice, req)
	require.Len(t, cd.Deny, 1)
	root.End()

	var grants []string
	var rules int
	for _, s := range exp.GetSpans() {
		a := map[attribute.Key]attribute.Value{}
		for _, kv := range s.Attributes {
			a[kv.Key] = kv.Value
		}
		switch s.Name {
		case engine.SpanGrant:
			require.Equal(t, root.SpanContext().SpanID(), s.Parent.SpanID())
			require.Equal(t, "no_override", a[engine.AttrGrantOutcome].AsString())
			grants = append(grants, a[engine.AttrGrant].AsString())
		case engine.SpanRules:
			require.Equal(t, root.SpanContext().SpanID(), s.Parent.SpanID())
			require.Equal(t, int64(1), a[engine.AttrRulesDenied].AsInt64())
			rules++
		}
	}
	require.Equal(t, []string{engine.GrantEvaluated, engine.GrantCached}, grants)
	require.Equal(t, 1, rules)
}

// Without a recording span in the context, a decision makes none and
// allocates nothing more.
func TestDecisionSpansOff(t *testing.T) {
	e := newEngine(t, nil)
	rev := e.Current()
	ctx := context.Background()
	rev.Grant(ctx, alice, listReq) // fill the cache
	allocs := testing.AllocsPerRun(100, func() { rev.Grant(ctx, alice, listReq) })
	require.Zero(t, allocs, "a cached grant decision allocates with tracing off")
}
