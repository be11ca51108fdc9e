package tracing

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of toolgate's spans.
const ScopeName = "github.com/toolgate/toolgate"

// The environment variables that turn tracing on without a flag, as the
// OpenTelemetry SDKs read them.
const (
	EnvEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
)

// Options configure a Tracer. The zero value is off.
type Options struct {
	// Endpoint is the OTLP/HTTP base URL (as OTEL_EXPORTER_OTLP_ENDPOINT:
	// spans go to its path + /v1/traces). "" falls back to the environment
	// (EnvTracesEndpoint, then EnvEndpoint, read by the exporter itself);
	// with neither, tracing is off.
	Endpoint string
	// Exporter, when set, receives the spans instead of an OTLP endpoint,
	// synchronously (tests use sdk/trace/tracetest's in-memory exporter).
	Exporter sdktrace.SpanExporter
	// ServiceName and ServiceVersion name the service in the resource; ""
	// is "toolgate" and no version.
	ServiceName, ServiceVersion string
	// Getenv reads the environment; nil is os.Getenv.
	Getenv func(string) string
	// TrustIncoming makes a request's span continue the client's trace (W3C
	// traceparent from _meta or the HTTP header) as its parent. Off, the
	// client's context is only linked: each request starts a trace of
	// toolgate's own, so a client can neither choose the trace id that
	// audit and decision logs record nor force sampling. Set it when the
	// clients are trusted (behind a gateway that sets traceparent).
	TrustIncoming bool
}

// Tracer makes toolgate's spans. A Tracer that is off (and a nil *Tracer)
// makes none at zero cost: every Start returns the context unchanged and a
// zero Span, without allocating. Safe for concurrent use.
type Tracer struct {
	tp    *sdktrace.TracerProvider
	tr    trace.Tracer
	prop  propagation.TextMapPropagator
	trust bool // Options.TrustIncoming
}

// New returns a Tracer exporting over OTLP/HTTP, or one that is off when
// no endpoint is configured. Shutdown flushes and stops it.
func New(ctx context.Context, opts Options) (*Tracer, error) {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	var sp sdktrace.SpanProcessor
	switch {
	case opts.Exporter != nil:
		sp = sdktrace.NewSimpleSpanProcessor(opts.Exporter)
	case opts.Endpoint != "" || getenv(EnvEndpoint) != "" || getenv(EnvTracesEndpoint) != "":
		var eo []otlptracehttp.Option
		if opts.Endpoint != "" {
			u, err := TracesURL(opts.Endpoint)
			if err != nil {
				return nil, err
			}
			eo = append(eo, otlptracehttp.WithEndpointURL(u))
		}
		exp, err := otlptracehttp.New(ctx, eo...)
		if err != nil {
			return nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
		}
		sp = sdktrace.NewBatchSpanProcessor(exp)
	default:
		return &Tracer{}, nil
	}
	name := opts.ServiceName
	if name == "" {
		name = "toolgate"
	}
	attrs := []attribute.KeyValue{semconv.ServiceName(name)}
	if opts.ServiceVersion != "" {
		attrs = append(attrs, semconv.ServiceVersion(opts.ServiceVersion))
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithSpanProcessor(sp),
		sdktrace.WithResource(resource.NewWithAttributes(semconv.SchemaURL, attrs...)),
	)
	return &Tracer{tp: tp, tr: tp.Tracer(ScopeName), prop: propagation.TraceContext{}, trust: opts.TrustIncoming}, nil
}

// TracesURL is where spans go for an OTLP/HTTP base URL: its path joined
// with v1/traces, as for OTEL_EXPORTER_OTLP_ENDPOINT.
func TracesURL(endpoint string) (string, error) {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("tracing: endpoint %q is not an http(s) URL", endpoint)
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/traces"
	return u.String(), nil
}

// Enabled reports whether the Tracer makes spans.
func (t *Tracer) Enabled() bool { return t != nil && t.tr != nil }

// Shutdown exports what is buffered and stops the Tracer; a Tracer that is
// off returns nil.
func (t *Tracer) Shutdown(ctx context.Context) error {
	if !t.Enabled() {
		return nil
	}
	return t.tp.Shutdown(ctx)
}

// Span is one span, or nothing (the zero Span) when tracing is off. Its
// methods are no-ops on the zero Span.
type Span struct{ s trace.Span }

// End ends the span.
func (s Span) End() {
	if s.s != nil {
		s.s.End()
	}
}

// Fail marks the span failed: status Error and error.type set to kind (a
// low-cardinality word, never a message: a message may carry an argument
// value).
func (s Span) Fail(kind string) {
	if s.s != nil {
		s.s.SetStatus(codes.Error, kind)
		s.s.SetAttributes(semconv.ErrorTypeKey.String(kind))
	}
}

// SetString sets one attribute.
func (s Span) SetString(key, value string) {
	if s.s != nil {
		s.s.SetAttributes(attribute.String(key, value))
	}
}

// Recording reports whether the span records (tracing on and sampled).
func (s Span) Recording() bool { return s.s != nil && s.s.IsRecording() }

// TraceID is the W3C trace id of the span in ctx, or "" when there is none.
func TraceID(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.HasTraceID() {
		return ""
	}
	return sc.TraceID().String()
}

// SpanID is the id of the span in ctx, or "" when there is none.
func SpanID(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.HasSpanID() {
		return ""
	}
	return sc.SpanID().String()
}
