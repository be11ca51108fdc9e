// Package sdklog is the logger toolgate gives the go-sdk: the operator's
// logger, from WARN up.
//
// The go-sdk logs at INFO what it does for every session: connected,
// initialized, disconnected. On the sessionless 2026-07-28 revision the
// SDK opens a server session for every request, so those lines would be
// a few per call, each formatted and written on the call's path. A
// gateway's log is for what goes wrong: the SDK's warnings and errors
// are kept, its INFO lines are not, unless the operator's logger asks
// for DEBUG, the level at which toolgate's log says everything.
package sdklog

import (
	"context"
	"log/slog"
)

// Level is the lowest level of the go-sdk's records that reach the
// operator's log, unless that log is enabled for DEBUG.
const Level = slog.LevelWarn

// For returns the logger to give the go-sdk in place of l: l itself when
// l is enabled for DEBUG (the operator asked for everything), else l's
// handler with the SDK's records below [Level] dropped before they are
// formatted. A nil l is nil.
func For(l *slog.Logger) *slog.Logger {
	if l == nil || l.Handler().Enabled(context.Background(), slog.LevelDebug) {
		return l
	}
	return slog.New(minLevel{h: l.Handler()})
}

// minLevel passes records of [Level] and above to h.
type minLevel struct{ h slog.Handler }

func (m minLevel) Enabled(ctx context.Context, lv slog.Level) bool {
	return lv >= Level && m.h.Enabled(ctx, lv)
}

func (m minLevel) Handle(ctx context.Context, r slog.Record) error { return m.h.Handle(ctx, r) }

func (m minLevel) WithAttrs(as []slog.Attr) slog.Handler { return minLevel{h: m.h.WithAttrs(as)} }

func (m minLevel) WithGroup(name string) slog.Handler { return minLevel{h: m.h.WithGroup(name)} }
