package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/toolgate/toolgate/decisionlog"
	"github.com/toolgate/toolgate/internal/config"
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
	key, err := s.DecisionLog.ReadHashKey()
	if err != nil {
		return nil, fmt.Errorf("decisionLogHashKey: %w", err)
	}
	to := s.Tracing.Options()
	to.ServiceVersion = Version
	tr, err := tracing.New(ctx, to)
	if err != nil {
		return nil, err
	}
	o := &observe{tr: tr}
	if s.DecisionLog.Target != "" {
		o.dl, err = decisionlog.Open(s.DecisionLog.Target, decisionlog.Options{
			Labels:  map[string]string{"id": newID(), "version": Version},
			Logger:  log,
			HashKey: key,
			// The history entries a decision read, only when asked.
			HistoryEntries: s.DecisionLog.HistoryEntries,
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

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
