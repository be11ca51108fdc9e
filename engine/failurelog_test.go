package engine_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/internal/testkit/proctest"
)

// TestReloadFailureIsLogged: a failed reload is logged (once per distinct
// error) and the last good revision keeps serving.
func TestReloadFailureIsLogged(t *testing.T) {
	t.Parallel()
	const failed = "toolgate: reload failed; the last good revision keeps serving"
	f := newWatchFixture(t, map[string]string{"grant.rego": grantEcho})
	var logs proctest.Buffer
	e, err := engine.New(context.Background(), engine.Source{Registry: f.registry, Policies: f.policies},
		engine.WithSettle(time.Millisecond), engine.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	require.NoError(t, err)
	for i, broken := range []string{"package toolgate.grant\n\ngranted := {\n", "package toolgate.grant\n\ngranted := {\"echo\"\n\n"} {
		f.write(f.pol("grant.rego"), broken)
		_, err := e.Reload(context.Background())
		require.Error(t, err)
		require.Equal(t, i+1, logs.Count(failed), "failure %d is logged", i)
		require.Equal(t, uint64(1), e.Current().Number(), "the first revision keeps serving")
	}
}
