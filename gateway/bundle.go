package gateway

import (
	"context"
	"log/slog"

	"github.com/toolgate/toolgate/bundle"
	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/engine"
)

// openSource returns what the engine loads: the configured registry and
// policy directory, or, with a bundle configured (SPEC §14), the persisted
// or freshly downloaded bundle and the client that keeps it current (nil
// without a bundle).
func openSource(ctx context.Context, cfg Config, log *slog.Logger) (engine.Source, *bundle.Client, error) {
	if !cfg.Bundle.Enabled() {
		return cfg.Source(), nil, nil
	}
	dir, err := config.StateDir()
	if err != nil {
		log.Warn("toolgate: no state directory; the bundle is not persisted", slog.Any("error", err))
		dir = ""
	}
	c, err := bundle.New(cfg.Bundle, bundle.Options{StateDir: dir, Logger: log})
	if err != nil {
		return engine.Source{}, nil, err
	}
	src, err := c.Initial(ctx)
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
