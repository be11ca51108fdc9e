package gateway

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/pins"
	"github.com/toolgate/toolgate/mcpadapter"
)

// pinsFile is the pins file when an upstream pins; "" when none does. A
// pins file that exists and cannot be read or parsed stops serve with an
// error naming it (docs/contract.md §15), before anything connects.
func pinsFile(s *config.Serve) (string, error) {
	for _, u := range s.Upstreams {
		if u.Pin {
			path, err := s.PinsFile()
			if err != nil {
				return "", err
			}
			if _, err := pins.Load(path); err != nil {
				return "", err
			}
			return path, nil
		}
	}
	return "", nil
}

// watchPins rebuilds the revision (rebuild) whenever the pins file changes,
// for instance after `toolgate pins accept`, until ctx is done.
func watchPins(ctx context.Context, log *slog.Logger, path string, rebuild func()) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		log.Error("toolgate: cannot watch the pins file; accepted pins take effect on the next rebuild", slog.String("pins", path), slog.Any("error", err))
		return
	}
	if err := pins.Watch(ctx, path, 100*time.Millisecond, rebuild); err != nil {
		log.Error("toolgate: cannot watch the pins file; accepted pins take effect on the next rebuild", slog.String("pins", path), slog.Any("error", err))
	}
}

// catalog is the upstreams' prompts and resources the adapters serve
// (docs/contract.md §16): the pool, when an upstream imports; nil
// otherwise.
func (g *Gateway) catalog() mcpadapter.Catalog {
	if g.pool == nil {
		return nil
	}
	for _, u := range g.cfg.Upstreams {
		if u.Import {
			return g.pool
		}
	}
	return nil
}
