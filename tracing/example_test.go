package tracing_test

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/toolgate/toolgate/tracing"
)

func ExampleTracer_StartRequest() {
	exp := tracetest.NewInMemoryExporter()
	// Clients are trusted here (behind a gateway that sets traceparent).
	tr, _ := tracing.New(context.Background(), tracing.Options{Exporter: exp, TrustIncoming: true})
	ctx, call := tr.StartRequest(context.Background(), tracing.Request{
		Method: "tools/call", Tool: "getReward",
		TraceParent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
	})
	_, hook := tr.StartHook(ctx, "ledger", "before")
	hook.End()
	call.End()
	for _, s := range exp.GetSpans() {
		fmt.Println(s.Name, s.SpanContext.TraceID())
	}
	// Output:
	// toolgate.hook ledger before 4bf92f3577b34da6a3ce929d0e0e4736
	// tools/call getReward 4bf92f3577b34da6a3ce929d0e0e4736
}
