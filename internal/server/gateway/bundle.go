package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"time"

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

// shadowBundleWait bounds the first download of a candidate bundle: the
// candidate never holds up serving.
const shadowBundleWait = 30 * time.Second

// openShadowBundle downloads the candidate bundle (Serve.Shadow.Bundle)
// with the client openSource uses, polled on the serving bundle's
// schedule and verified with its key (the serving bundle's credentials go
// only to the same origin), and builds the candidate's engine from it.
// The client then keeps it current until the gateway closes: each new
// candidate is compiled like a reload (engine.ReloadFrom) and one that is
// refused is never evaluated, the one before it staying. Nothing is
// persisted. log names the candidate, so its refusals are not read as the
// serving policy's.
func (g *Gateway) openShadowBundle(log *slog.Logger) (*engine.Engine, error) {
	serving := g.cfg.Bundle
	bc := bundle.Config{URL: g.cfg.Shadow.Bundle, Polling: serving.Polling}
	if serving.Enabled() {
		bc.Signing = serving.Signing
		if sameOrigin(bc.URL, serving.URL) {
			bc.Type, bc.Credentials = serving.Type, serving.Credentials
		}
	}
	c, err := bundle.New(bc, bundle.Options{Logger: log})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(g.ctx, shadowBundleWait)
	defer cancel()
	src, err := c.Initial(ctx)
	if err != nil {
		return nil, err
	}
	eng, err := engine.New(g.ctx, src, append(slices.Clone(g.engOpts), engine.WithLogger(log))...)
	if err != nil {
		c.Discard()
		if src.Revision != "" {
			err = fmt.Errorf("revision %q: %w", src.Revision, err)
		}
		return nil, err
	}
	g.goUntilClose(func(ctx context.Context) { _ = c.Run(ctx, eng) })
	return eng, nil
}

// sameOrigin reports whether a and b are URLs of the same scheme and host.
func sameOrigin(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && ua.Scheme == ub.Scheme && ua.Host == ub.Host
}
