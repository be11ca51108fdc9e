package console_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/console"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/inspect"
)

// TestStreamsOutliveNoCredential: the caller of a live stream is known
// once, when it opens; a stream that lasted as long as its connection
// would keep showing the activity tail (who called what, how it ended,
// approval ids) to an operator whose token expired or was revoked, or
// whose role was taken away. Every stream ends after StreamLifetime, and
// the page's reconnect presents the credential again.
func TestStreamsOutliveNoCredential(t *testing.T) {
	t.Parallel()
	ops := &engine.Caller{Subject: "ops", Roles: []string{"admin"}}
	c := console.New(console.Options{
		Auth: func(*http.Request) (*engine.Caller, bool) { return ops, true },
		Explainer: console.ExplainerFunc(func(context.Context, *engine.Caller, string, json.RawMessage) *inspect.Explanation {
			return nil
		}),
		StreamLifetime: time.Millisecond,
	})
	srv := httptest.NewServer(c)
	defer srv.Close()
	for _, path := range []string{"/console/api/activity", "/console/api/approvals/events"} {
		// The deadline bounds a failure only: the stream must end on its own.
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+path, nil)
		require.NoError(t, err)
		res, err := srv.Client().Do(req)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode)
		_, err = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		cancel()
		require.NoError(t, err, "%s: the stream did not end by itself", path)
	}
}
