package tracing_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/methods"
	"github.com/toolgate/toolgate/toolcall"
	"github.com/toolgate/toolgate/tracing"
)

const (
	clientTrace  = "4bf92f3577b34da6a3ce929d0e0e4736"
	clientParent = "00f067aa0ba902b7"
	traceparent  = "00-" + clientTrace + "-" + clientParent + "-01"
	headerTrace  = "0af7651916cd43dd8448eb211c80319c"
	headerParent = "b7ad6b7169203331"
	headerTP     = "00-" + headerTrace + "-" + headerParent + "-01"
)

func noEnv(string) string { return "" }

// newInMemory is a Tracer exporting to memory that trusts the client's
// trace context (Options.TrustIncoming).
func newInMemory(t *testing.T) (*tracing.Tracer, *tracetest.InMemoryExporter) {
	t.Helper()
	return newInMemoryWith(t, tracing.Options{TrustIncoming: true})
}

func newInMemoryWith(t *testing.T, opts tracing.Options) (*tracing.Tracer, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	opts.Exporter, opts.Getenv = exp, noEnv
	tr, err := tracing.New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Shutdown(context.Background()) })
	return tr, exp
}

type fakeMethod struct{ res *mcp.CallToolResult }

func (fakeMethod) HasArgument(string) bool { return true }
func (m fakeMethod) Bind([]toolcall.Arg) (methods.Invocation, error) {
	return func(context.Context) (*mcp.CallToolResult, error) { return m.res, nil }, nil
}

// pipeline stands in for the adapter: a before hook, the method, an after
// hook, each in its span (the grant decision's and the call rules' spans are
// the engine's, tested there).
func pipeline(hook hooks.Hook, ms methods.Set) mcp.MethodHandler {
	return func(ctx context.Context, _ string, _ mcp.Request) (mcp.Result, error) {
		call := &hooks.CallContext{Name: "getReward"}
		if _, err := hook.Before(ctx, call); err != nil {
			return nil, err
		}
		m, _ := ms.Method("demo.getReward")
		inv, _ := m.Bind(nil)
		res, err := inv(ctx)
		_ = hook.After(ctx, call, &hooks.Record{})
		return res, err
	}
}

func byName(spans tracetest.SpanStubs) map[string]tracetest.SpanStub {
	out := map[string]tracetest.SpanStub{}
	for _, s := range spans {
		out[s.Name] = s
	}
	return out
}

func attrs(s tracetest.SpanStub) map[attribute.Key]string {
	out := map[attribute.Key]string{}
	for _, kv := range s.Attributes {
		out[kv.Key] = kv.Value.String()
	}
	return out
}

func TestCallSpansContinueTheMetaTraceparent(t *testing.T) {
	t.Parallel()
	tr, exp := newInMemory(t)
	hook := tr.WrapHook(hooks.Hook{Name: "ledger",
		Before: func(context.Context, *hooks.CallContext) (hooks.Verdict, error) {
			return hooks.Allow(), nil
		},
		After: func(context.Context, *hooks.CallContext, *hooks.Record) error {
			return errors.New("disk full")
		},
	})
	ms := tr.WrapMethods(methods.Map{"demo.getReward": fakeMethod{res: &mcp.CallToolResult{IsError: true}}})
	h := tr.Middleware(nil)(pipeline(hook, ms))
	req := &mcp.CallToolRequest{
		Params: &mcp.CallToolParamsRaw{Name: "getReward", Meta: mcp.Meta{"traceparent": traceparent}},
		Extra:  &mcp.RequestExtra{Header: http.Header{"Traceparent": {headerTP}}},
	}
	if _, err := h(context.Background(), "tools/call", req); err != nil {
		t.Fatal(err)
	}
	spans := byName(exp.GetSpans())
	root, ok := spans["tools/call getReward"]
	if !ok {
		t.Fatalf("no tools/call span among %v", spans)
	}
	if root.SpanKind != trace.SpanKindServer || root.SpanContext.TraceID().String() != clientTrace ||
		root.Parent.SpanID().String() != clientParent || !root.Parent.IsRemote() {
		t.Errorf("root span: kind %v, trace %v, parent %v", root.SpanKind, root.SpanContext.TraceID(), root.Parent.SpanID())
	}
	ra := attrs(root)
	for k, want := range map[attribute.Key]string{
		"mcp.method.name": "tools/call", "gen_ai.tool.name": "getReward",
		"gen_ai.operation.name": "execute_tool", "error.type": "tool_error",
	} {
		if ra[k] != want {
			t.Errorf("root %s = %q, want %q", k, ra[k], want)
		}
	}
	for name, want := range map[string]map[attribute.Key]string{
		"toolgate.hook ledger before":    {"toolgate.hook.name": "ledger", "toolgate.hook.phase": "before"},
		"toolgate.hook ledger after":     {"toolgate.hook.name": "ledger", "toolgate.hook.phase": "after", "error.type": "hook_failed"},
		"toolgate.method demo.getReward": {"toolgate.method": "demo.getReward", "error.type": "tool_error"},
	} {
		s, ok := spans[name]
		if !ok {
			t.Errorf("no span %q", name)
			continue
		}
		if s.Parent.SpanID() != root.SpanContext.SpanID() {
			t.Errorf("%s is not a child of the tools/call span", name)
		}
		got := attrs(s)
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: %s = %q, want %q", name, k, got[k], v)
			}
		}
	}
	if len(spans) != 4 {
		t.Errorf("%d spans, want 4", len(spans))
	}
}

func TestListSpanContinuesTheHeaderTraceparent(t *testing.T) {
	t.Parallel()
	tr, exp := newInMemory(t)
	var inner context.Context
	h := tr.Middleware(nil)(func(ctx context.Context, _ string, _ mcp.Request) (mcp.Result, error) {
		inner = ctx
		return &mcp.ListToolsResult{}, nil
	})
	req := &mcp.ListToolsRequest{Params: &mcp.ListToolsParams{Meta: mcp.Meta{"traceparent": "not a traceparent"}},
		Extra: &mcp.RequestExtra{Header: http.Header{"Traceparent": {headerTP}, "Mcp-Protocol-Version": {"2026-07-28"}}}}
	if _, err := h(context.Background(), "tools/list", req); err != nil {
		t.Fatal(err)
	}
	spans := exp.GetSpans()
	if len(spans) != 1 || spans[0].Name != "tools/list" || spans[0].SpanContext.TraceID().String() != headerTrace ||
		spans[0].Parent.SpanID().String() != headerParent {
		t.Fatalf("spans %+v", spans)
	}
	if got := attrs(spans[0]); got["mcp.protocol.version"] != "2026-07-28" || got["mcp.method.name"] != "tools/list" {
		t.Errorf("tools/list attributes %v", got)
	}
	if tracing.TraceID(inner) != headerTrace || tracing.SpanID(inner) != spans[0].SpanContext.SpanID().String() {
		t.Errorf("handler context: trace %q span %q", tracing.TraceID(inner), tracing.SpanID(inner))
	}
	// No params at all (a typed nil behind mcp.Params): a span, no panic.
	if _, err := h(context.Background(), "tools/list", &mcp.ListToolsRequest{}); err != nil {
		t.Fatal(err)
	}
	if len(exp.GetSpans()) != 2 {
		t.Fatalf("%d spans after a tools/list without params", len(exp.GetSpans()))
	}
	// Other methods pass through without a span.
	if _, err := h(context.Background(), "ping", req); err != nil {
		t.Fatal(err)
	}
	if len(exp.GetSpans()) != 2 {
		t.Errorf("ping made a span")
	}
	// The prompts and resources methods are decisions (docs/contract.md
	// §16): a span named by the method.
	if _, err := h(context.Background(), "prompts/list", req); err != nil {
		t.Fatal(err)
	}
	if spans := exp.GetSpans(); len(spans) != 3 || spans[2].Name != "prompts/list" {
		t.Errorf("prompts/list: spans %+v", spans)
	}
	// Each of them, a prompts/get and a resources/read among them: a
	// server span named by the method, without the name or URI the client
	// sent.
	for method, r := range map[string]mcp.Request{
		"prompts/get":              &mcp.GetPromptRequest{Params: &mcp.GetPromptParams{Name: "client-named-prompt"}},
		"resources/list":           &mcp.ListResourcesRequest{Params: &mcp.ListResourcesParams{}},
		"resources/templates/list": &mcp.ListResourceTemplatesRequest{Params: &mcp.ListResourceTemplatesParams{}},
		"resources/read":           &mcp.ReadResourceRequest{Params: &mcp.ReadResourceParams{URI: "file:///client-named-uri"}},
		"resources/subscribe":      &mcp.SubscribeRequest{Params: &mcp.SubscribeParams{URI: "file:///client-named-uri"}},
		"resources/unsubscribe":    &mcp.UnsubscribeRequest{Params: &mcp.UnsubscribeParams{URI: "file:///client-named-uri"}},
		"completion/complete": &mcp.CompleteRequest{Params: &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "client-named-prompt"},
			Argument: mcp.CompleteParamsArgument{Name: "a", Value: "client-named-value"}}},
	} {
		before := len(exp.GetSpans())
		if _, err := h(context.Background(), method, r); err != nil {
			t.Fatal(err)
		}
		spans := exp.GetSpans()
		if len(spans) != before+1 {
			t.Errorf("%s: %d spans, want one more than %d", method, len(spans), before)
			continue
		}
		sp := spans[len(spans)-1]
		if sp.Name != method || sp.SpanKind != trace.SpanKindServer {
			t.Errorf("%s: span %q of kind %v", method, sp.Name, sp.SpanKind)
		}
		for k, v := range attrs(sp) {
			if strings.Contains(fmt.Sprint(v), "client-named") {
				t.Errorf("%s: attribute %s = %v holds what the client named", method, k, v)
			}
		}
	}
}

func TestOffMakesNoSpansAndDoesNotAllocate(t *testing.T) {
	// Not parallel: AllocsPerRun refuses parallel tests.
	tr, err := tracing.New(context.Background(), tracing.Options{Getenv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Enabled() {
		t.Fatal("a Tracer with no endpoint is on")
	}
	h := hooks.Hook{Name: "x"}
	if got := tr.WrapHook(h); got.Before != nil || got.After != nil {
		t.Error("WrapHook wrapped while off")
	}
	ms := methods.Map{}
	if _, ok := tr.WrapMethods(ms).(methods.Map); !ok {
		t.Error("WrapMethods wrapped while off")
	}
	ctx := context.Background()
	allocs := testing.AllocsPerRun(100, func() {
		c, s := tr.StartRequest(ctx, tracing.Request{Method: "tools/call", Tool: "getReward"})
		_, hs := tr.StartHook(c, "ledger", "before")
		hs.End()
		_, m := tr.StartMethod(c, "demo.getReward", "")
		m.Fail("tool_error")
		m.End()
		s.End()
		if c != ctx || tracing.TraceID(c) != "" {
			t.Fatal("off Tracer changed the context")
		}
	})
	if allocs != 0 {
		t.Errorf("off: %v allocations per call", allocs)
	}
	var nilTracer *tracing.Tracer
	if _, s := nilTracer.StartHook(ctx, "x", "before"); s.Recording() {
		t.Error("nil Tracer recorded")
	}
}

// otlpSink is a loopback OTLP/HTTP receiver.
func otlpSink(t *testing.T) (*httptest.Server, chan *collectortrace.ExportTraceServiceRequest) {
	got := make(chan *collectortrace.ExportTraceServiceRequest, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			t.Errorf("export to %s as %q", r.URL.Path, r.Header.Get("Content-Type"))
		}
		body, _ := io.ReadAll(r.Body)
		req := &collectortrace.ExportTraceServiceRequest{}
		if err := proto.Unmarshal(body, req); err != nil {
			t.Errorf("export does not decode: %v", err)
		}
		got <- req
		w.Header().Set("Content-Type", "application/x-protobuf")
		b, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
		_, _ = w.Write(b)
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

func spanNames(reqs chan *collectortrace.ExportTraceServiceRequest) []string {
	var names []string
	for {
		select {
		case r := <-reqs:
			for _, rs := range r.ResourceSpans {
				for _, ss := range rs.ScopeSpans {
					for _, s := range ss.Spans {
						names = append(names, s.Name)
					}
				}
			}
		default:
			return names
		}
	}
}

func exportOne(t *testing.T, opts tracing.Options) {
	t.Helper()
	tr, err := tracing.New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if !tr.Enabled() {
		t.Fatal("tracing is off")
	}
	_, s := tr.StartRequest(context.Background(), tracing.Request{Method: "tools/list"})
	s.End()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tr.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestExportsOverOTLPHTTP(t *testing.T) {
	t.Parallel()
	srv, got := otlpSink(t)
	exportOne(t, tracing.Options{Endpoint: srv.URL, Getenv: noEnv})
	if names := spanNames(got); len(names) != 1 || names[0] != "tools/list" {
		t.Fatalf("exported %v", names)
	}
}

func TestEndpointFromEnvironment(t *testing.T) {
	srv, got := otlpSink(t)
	t.Setenv(tracing.EnvEndpoint, srv.URL)
	t.Setenv(tracing.EnvTracesEndpoint, "")
	exportOne(t, tracing.Options{})
	if names := spanNames(got); len(names) != 1 {
		t.Fatalf("exported %v", names)
	}
}

func TestTracesURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"http://collector:4318":  "http://collector:4318/v1/traces",
		"https://collector/":     "https://collector/v1/traces",
		"http://gw.example/otlp": "http://gw.example/otlp/v1/traces",
		"collector:4318":         "",
		"ftp://collector/":       "",
	} {
		got, err := tracing.TracesURL(in)
		if got != want || (err != nil) != (want == "") {
			t.Errorf("TracesURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

var _ sdktrace.SpanExporter = (*tracetest.InMemoryExporter)(nil)

type upstreamMethod struct{ fakeMethod }

func (upstreamMethod) UpstreamTool() string { return "search" }

func TestUpstreamMethodIsAClientSpan(t *testing.T) {
	t.Parallel()
	tr, exp := newInMemory(t)
	ms := tr.WrapMethods(methods.Map{"upstream:docs/search": upstreamMethod{fakeMethod{res: &mcp.CallToolResult{}}}})
	m, ok := ms.Method("upstream:docs/search")
	if !ok {
		t.Fatal("method not found")
	}
	inv, err := m.Bind(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := inv(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans := exp.GetSpans()
	if len(spans) != 1 || spans[0].Name != "tools/call search" || spans[0].SpanKind != trace.SpanKindClient ||
		attrs(spans[0])["toolgate.method"] != "upstream:docs/search" || attrs(spans[0])["gen_ai.tool.name"] != "search" {
		t.Fatalf("spans %+v", spans)
	}
	if _, ok := ms.Method("missing"); ok {
		t.Fatal("a missing method was found")
	}
}
