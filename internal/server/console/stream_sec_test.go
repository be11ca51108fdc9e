package console_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/inspect"
	"github.com/toolgate/toolgate/internal/server/console"
	"github.com/toolgate/toolgate/toolcall"
)

// TestStreamsOutliveNoCredential: the caller of a live stream is known
// once, when it opens; a stream that lasted as long as its connection
// would keep showing the activity tail (who called what, how it ended,
// approval ids) to an operator whose token expired or was revoked, or
// whose role was taken away. Every stream ends after StreamLifetime, and
// the page's reconnect presents the credential again.
func TestStreamsOutliveNoCredential(t *testing.T) {
	t.Parallel()
	ops := &toolcall.Caller{Subject: "ops", Roles: []string{"admin"}}
	c := console.New(console.Options{
		Auth: func(*http.Request) (*toolcall.Caller, bool) { return ops, true },
		Explainer: console.ExplainerFunc(func(context.Context, *toolcall.Caller, string, json.RawMessage) *inspect.Explanation {
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

// TestConsoleStreamsCapped: the console's live streams are capped
// (MaxSubscribers: one more gets 503), and each counts against the
// server's stream caps (OpenStream's refusal is a 429 with its reason).
func TestConsoleStreamsCapped(t *testing.T) {
	t.Parallel()
	ops := &toolcall.Caller{Subject: "ops", Roles: []string{"admin"}}
	var refuse atomic.Bool
	c := console.New(console.Options{
		Auth: func(*http.Request) (*toolcall.Caller, bool) { return ops, true },
		Explainer: console.ExplainerFunc(func(context.Context, *toolcall.Caller, string, json.RawMessage) *inspect.Explanation {
			return nil
		}),
		MaxSubscribers: 1,
		OpenStream: func(*http.Request) (func(), error) {
			if refuse.Load() {
				return nil, errors.New("too many streams for this caller")
			}
			return func() {}, nil
		},
	})
	srv := httptest.NewServer(c)
	defer srv.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	get := func(ctx context.Context) *http.Response {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/console/api/activity", nil)
		require.NoError(t, err)
		res, err := srv.Client().Do(req)
		require.NoError(t, err)
		t.Cleanup(func() { res.Body.Close() })
		return res
	}
	first := get(ctx)
	require.Equal(t, http.StatusOK, first.StatusCode)
	second := get(t.Context())
	assert.Equal(t, http.StatusServiceUnavailable, second.StatusCode)
	cancel()
	_, _ = io.Copy(io.Discard, first.Body)
	refuse.Store(true)
	require.Eventually(t, func() bool { return get(t.Context()).StatusCode == http.StatusTooManyRequests }, time.Minute, 10*time.Millisecond)
}
