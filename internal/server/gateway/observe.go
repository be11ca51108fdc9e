package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/decisionlog"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/metrics"
	"github.com/toolgate/toolgate/tracing"
)

// observeCloseTimeout bounds the flush of decision logs and spans at
// shutdown.
const observeCloseTimeout = 5 * time.Second

// observe is what docs/contract.md §14 adds around served calls: OpenTelemetry spans
// (--otel-endpoint or OTEL_EXPORTER_OTLP_ENDPOINT) and OPA-shaped decision
// logs (--decision-log). Each is off unless configured, and then costs
// nothing: the wrappers return what they are given.
type observe struct {
	tr *tracing.Tracer
	dl *decisionlog.Logger // nil when off
}

// buildObserve opens tracing and the decision log (docs/contract.md §14). It is New's
// first step, so that Close ends it last: what the calls traced and logged
// is flushed once everything else is done.
func (g *Gateway) buildObserve() error {
	obs, err := openObserve(g.ctx, &g.cfg.Serve, g.log, g.m)
	if err != nil {
		return err
	}
	g.obs = obs
	g.onClose(obs.Close)
	return nil
}

// openObserve starts the tracer and the decision logger the settings ask
// for; the decision log's drops are counted in m's registry.
func openObserve(ctx context.Context, s *config.Serve, log *slog.Logger, m *metrics.Metrics) (*observe, error) {
	key, err := s.HashKey()
	if err != nil {
		return nil, fmt.Errorf("decisionLogHashKey: %w", err)
	}
	tr, err := tracing.New(ctx, tracing.Options{Endpoint: s.OtelEndpoint, ServiceVersion: Version, TrustIncoming: s.TrustTraceparent})
	if err != nil {
		return nil, err
	}
	o := &observe{tr: tr}
	if s.DecisionLog != "" {
		o.dl, err = decisionlog.Open(s.DecisionLog, decisionlog.Options{
			Labels:  map[string]string{"id": newID(), "version": Version},
			Logger:  log,
			HashKey: key,
		})
		if err != nil {
			_ = tr.Shutdown(ctx)
			return nil, err
		}
		m.Registry().MustRegister(o.dl.Collectors()...)
	}
	if tr.Enabled() {
		log.Info("toolgate: tracing to OpenTelemetry (OTLP/HTTP)")
	}
	return o, nil
}

// Close writes what the decision log buffered and the spans not yet
// exported.
func (o *observe) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), observeCloseTimeout)
	defer cancel()
	return errors.Join(o.dl.Close(ctx), o.tr.Shutdown(ctx))
}

// methods returns ms with each method's run in its span.
func (o *observe) methods(ms mcpadapter.MethodSet) mcpadapter.MethodSet { return o.tr.WrapMethods(ms) }

// hook returns h with each half in its span.
func (o *observe) hook(h mcpadapter.Hook) mcpadapter.Hook { return o.tr.WrapHook(h) }

// install adds the decision-log observer to a (every grant and call
// decision, SPEC §14) and the tracing middleware to s (added last: it runs
// first, so every hook and observer sees the request's span). Call it
// after a.NewServer and the other hooks.
func (o *observe) install(a *mcpadapter.Adapter, s *mcp.Server, eng *engine.Engine) {
	if o.dl != nil {
		a.AddObserver(o.dl.Observer())
	}
	// A span names a tool only when a row of the revision serving has its
	// name: anyone may send any name.
	isRow := func(name string) bool { return eng.Current().ToolIndex(name) >= 0 }
	s.AddReceivingMiddleware(o.tr.MiddlewareOf(tracing.WireMeta, isRow))
}

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
