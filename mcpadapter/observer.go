package mcpadapter

import (
	"context"
	"log/slog"
	"time"

	"github.com/toolgate/toolgate/hooks"
)

// AddObserver registers an observer. Configure it before serving, as
// AddHook; observers are told in registration order.
func (a *Adapter) AddObserver(o hooks.Observer) { a.observers = append(a.observers, o) }

// observeCall tells every observer of a call that took a grant decision.
func (a *Adapter) observeCall(ctx context.Context, call *hooks.CallContext, rec *hooks.Record) {
	for _, o := range a.observers {
		if o.Call == nil {
			continue
		}
		if err := safely(func() error { o.Call(ctx, call, rec); return nil }); err != nil {
			a.log.Error("decision observer failed; ignored",
				slog.String("observer", o.Name), slog.String("decision_id", call.DecisionID), slog.Any("error", err))
		}
	}
}

// observeList tells every observer of a listing's grant decision; rows are
// the listed rows of rc's revision.
func (a *Adapter) observeList(ctx context.Context, l *hooks.ListRecord, rc *revisionCache, rows []int) {
	tools := rc.rev.Registry().Tools
	l.Listed = make([]string, len(rows))
	for k, i := range rows {
		l.Listed[k] = tools[i].Name
	}
	l.Fallback = a.opts.ListFallback
	l.Duration = time.Since(l.Start)
	for _, o := range a.observers {
		if o.List == nil {
			continue
		}
		if err := safely(func() error { o.List(ctx, l); return nil }); err != nil {
			a.log.Error("decision observer failed; ignored", slog.String("observer", o.Name), slog.Any("error", err))
		}
	}
}
