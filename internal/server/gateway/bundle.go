package gateway

import (
	"context"
	"log/slog"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/runtime/bundle"
)

// openSource returns what the engine loads: the configured registry and
// policy directory, or, with a bundle configured (docs/contract.md §14), the persisted
// or freshly downloaded bundle and the client that keeps it current (nil
// without a bundle).
func (g *Gateway) openSource() (engine.Source, *bundle.Client, error) {
	cfg, log := g.cfg, g.log
	if !cfg.Bundle.Enabled() {
		return cfg.Source(), nil, nil
	}
	dir, err := config.StateDir()
	if err != nil {
		log.Warn("toolgate: no state directory; the bundle is not persisted", slog.Any("error", err))
		dir = ""
	}
	c, err := bundle.New(cfg.Bundle, bundle.Options{StateDir: dir, Logger: log,
		// As a file reload's (watch): counted, and the rows checked against the methods.
		OnActivated: func(string) {
			g.m.ReloadOK()
			if e := g.engRef.Load(); e != nil {
				warnMismatches(log, e.Current().Registry(), g.methods)
			}
		},
		OnRefused: func(error) { g.m.ReloadFailed() },
	})
	if err != nil {
		return engine.Source{}, nil, err
	}
	src, err := c.Initial(g.ctx)
	if err != nil {
		return engine.Source{}, nil, err
	}
	return src, c, nil
}

// runBundle polls the bundle server until the gateway closes; nothing
// without a bundle.
func runBundle(g *Gateway, c *bundle.Client, eng *engine.Engine) {
	if c == nil {
		return
	}
	g.goUntilClose(func(ctx context.Context) { _ = c.Run(ctx, eng) })
}
