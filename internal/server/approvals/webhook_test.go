package approvals_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/server/approvals"
	"github.com/toolgate/toolgate/store"
)

// TestWebhookRetries: a webhook that fails is tried again; the event
// carries no arguments.
func TestWebhookRetries(t *testing.T) {
	t.Parallel()
	var attempts atomic.Int32
	got := make(chan map[string]any, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if attempts.Add(1) < 3 {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		var ev map[string]any
		_ = json.NewDecoder(r.Body).Decode(&ev)
		got <- ev
	}))
	t.Cleanup(srv.Close)
	wh := approvals.NewWebhook(srv.URL, approvals.WebhookOptions{Backoff: time.Millisecond, Attempts: 3})
	t.Cleanup(func() { _ = wh.Close() })
	wh.Notify(approvals.Request{ID: "id1", Subject: "alice", Tool: "wipe", Reason: "r", Approvers: []string{"admin"},
		Arguments: json.RawMessage(`{"secret":"x"}`), Expires: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)})
	select {
	case ev := <-got:
		assert.Equal(t, map[string]any{"id": "id1", "subject": "alice", "tool": "wipe", "reason": "r",
			"approvers": []any{"admin"}, "expires": "2026-12-01T10:00:00Z", "text": "Approval id1 requested: wipe by alice: r"}, ev)
	case <-time.After(time.Minute): // a failure bound only
		t.Fatal("the webhook never succeeded")
	}
	assert.EqualValues(t, 3, attempts.Load())
}

// TestWebhookNeverBlocksTheCall: a webhook that hangs does not hold the
// call; the request stays pending and listable.
func TestWebhookNeverBlocksTheCall(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	wh := approvals.NewWebhook(srv.URL, approvals.WebhookOptions{Timeout: time.Hour, Queue: 1})
	t.Cleanup(func() { _ = wh.Close() })

	for range 5 { // more than the queue holds: dropped, never blocking
		wh.Notify(approvals.Request{ID: "x"})
	}
	e := newEnvOptions(t, store.NewMemoryStore(), testPolicy, approvals.Options{OnRequest: wh.Notify})
	as := e.connect(t, alice, nil)
	id := hold(t, as, "db1")
	list, err := e.gate.Pending(context.Background(), bob)
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, id, list[0].ID)
}

// TestWebhookCoalescesWhatItCannotQueue: requests the queue has no room
// for are not dropped silently: once the queue drained, one summary event
// says how many there were, and each outcome is counted.
func TestWebhookCoalescesWhatItCannotQueue(t *testing.T) {
	t.Parallel()
	first := make(chan struct{})
	release := make(chan struct{})
	got := make(chan approvals.WebhookEvent, 8)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev approvals.WebhookEvent
		_ = json.NewDecoder(r.Body).Decode(&ev)
		if ev.ID == "r0" {
			close(first)
			<-release
		}
		got <- ev
	}))
	t.Cleanup(srv.Close)
	var mu sync.Mutex
	counts := map[string]int{}
	wh := approvals.NewWebhook(srv.URL, approvals.WebhookOptions{Queue: 1, OnResult: func(r string) {
		mu.Lock()
		counts[r]++
		mu.Unlock()
	}})
	t.Cleanup(func() { _ = wh.Close() })
	wh.Notify(approvals.Request{ID: "r0", Subject: "alice", Tool: "wipe"})
	<-first // r0 is being sent; the queue holds one more
	for i := 1; i <= 4; i++ {
		wh.Notify(approvals.Request{ID: fmt.Sprint("r", i), Subject: "alice", Tool: "wipe"})
	}
	close(release)
	var evs []approvals.WebhookEvent
	for len(evs) < 3 {
		select {
		case ev := <-got:
			evs = append(evs, ev)
		case <-time.After(time.Minute): // a failure bound only
			t.Fatalf("the webhook got %d events, want 3: %+v", len(evs), evs)
		}
	}
	assert.Equal(t, "r0", evs[0].ID)
	assert.Equal(t, "r1", evs[1].ID)
	assert.Equal(t, 3, evs[2].Coalesced, "r2, r3 and r4 in one summary")
	assert.Empty(t, evs[2].ID)
	assert.Contains(t, evs[2].Text, "3 more approval requests")
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return counts[approvals.WebhookSent] == 3
	}, time.Minute, time.Millisecond)
	mu.Lock()
	assert.Equal(t, 3, counts[approvals.WebhookCoalesced])
	mu.Unlock()
}

// TestCheckWebhookURL: a webhook is an http(s) URL with a host.
func TestCheckWebhookURL(t *testing.T) {
	t.Parallel()
	for v, ok := range map[string]bool{"https://hooks.example.com/x": true, "http://127.0.0.1:9/": true, "ftp://x/": false, "https://": false, "hooks.example.com": false} {
		if got := approvals.CheckWebhookURL(v) == nil; got != ok {
			t.Errorf("CheckWebhookURL(%q) accepted %v, want %v", v, got, ok)
		}
	}
}
