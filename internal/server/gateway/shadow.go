package gateway

import (
	"context"
	"log/slog"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/internal/server/shadow"
)

// buildShadow compiles the candidate of Serve.Shadow (docs/shadow.md) like
// a reload would, from its policy directory or its bundle (kept current
// as the serving bundle is: gateway/bundle.go), and starts the worker that
// compares every decision with it. A candidate that does not load or
// compile is reported (log, verbose /healthz, the console) and never
// evaluated; serving goes on.
func (g *Gateway) buildShadow() error {
	sc := g.cfg.Shadow
	if !sc.Enabled() {
		return nil
	}
	o := shadow.Options{Registerer: g.m.Registry(), Logger: g.log, DecisionLog: g.obs.dl}
	if sc.Bundle != "" {
		if eng, err := g.openShadowBundle(g.log.With(slog.String("shadow", "candidate bundle"))); err != nil {
			o.Err = err
		} else {
			o.Engine = eng
		}
	} else {
		reg := sc.Registry
		if reg == "" {
			reg = g.cfg.Registry
		}
		eng, err := engine.New(g.ctx, toolgate.Source(reg, sc.Policy), g.engOpts...)
		if err != nil {
			o.Err = err
		} else {
			o.Candidate = eng.Current()
		}
	}
	g.shadow = shadow.New(o)
	g.goUntilClose(func(ctx context.Context) { g.shadow.Run(ctx) })
	return nil
}

// Shadow is the status of the shadow candidate; nil without one.
func (g *Gateway) Shadow() *shadow.Status {
	if g.shadow == nil {
		return nil
	}
	st := g.shadow.Status()
	return &st
}
