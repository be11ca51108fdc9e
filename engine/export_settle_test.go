package engine

import (
	"context"
	"time"
)

// WithClock sets the clock the settle window is measured with.
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// ReloadOnce is one reload attempt, without waiting: it reports how long
// the settle window still holds the reload back.
func (e *Engine) ReloadOnce(ctx context.Context) (changed bool, wait time.Duration, err error) {
	return e.reload(ctx, e.opts.settle)
}
