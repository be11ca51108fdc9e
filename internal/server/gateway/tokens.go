package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/toolgate/toolgate/identity"
	"github.com/toolgate/toolgate/internal/pins"
)

// tokenSource is the tokens the HTTP transport asks first: the tokens
// file (reloaded on change) or the bundled example's demo token.
type tokenSource interface {
	identity.HashLookup
	Len() int
}

// watchTokens reloads the tokens file whenever it changes, until ctx is
// done, as registry and policies reload: a file that loads replaces the
// tokens in one step (logged with their number); one that does not keeps
// the last good tokens serving, and the log says why.
func watchTokens(ctx context.Context, log *slog.Logger, f *identity.TokensFile) {
	reload := func() {
		changed, err := f.Reload()
		switch {
		case err != nil:
			log.Error("toolgate: the tokens file does not load; the last good tokens keep serving until it is fixed",
				slog.String("tokens", f.Path()), slog.Any("error", err))
		case changed:
			log.Info("toolgate: tokens file reloaded", slog.String("tokens", f.Path()), slog.Int("tokens_loaded", f.Len()))
		}
	}
	if err := pins.Watch(ctx, f.Path(), 100*time.Millisecond, reload); err != nil {
		log.Error("toolgate: cannot watch the tokens file; edits take effect at the next start",
			slog.String("tokens", f.Path()), slog.Any("error", err))
	}
}

// tokensLoaded is the welcome's line about the tokens file.
func tokensLoaded(n int) string {
	if n == 1 {
		return "toolgate: 1 bearer token loaded."
	}
	return fmt.Sprintf("toolgate: %d bearer tokens loaded.", n)
}
