package console

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/hooks/audit"
	"github.com/toolgate/toolgate/toolcall"
)

// Defaults of the Activity.
const (
	DefaultBacklog = 1000
	// DefaultMaxSubscribers caps the console's live streams at once
	// (Options.MaxSubscribers).
	DefaultMaxSubscribers = 256
	// DefaultStreamLifetime is how long a live stream lasts before it
	// ends and the page reconnects (Options.StreamLifetime).
	DefaultStreamLifetime = 5 * time.Minute
	// maxSeen bounds the callers remembered for the matrix.
	maxSeen = 1000
	// HookName is the name of the Activity's after hook.
	HookName = "console"
)

// Event is one call of the live tail: the audit record (docs/contract.md §10) without
// anything a call carried in (no argument values, no _meta, no server-side
// error text): only the hash of the arguments.
type Event struct {
	Seq             uint64  `json:"seq"`
	DecisionID      string  `json:"decision_id"`
	Timestamp       string  `json:"timestamp"`
	Subject         string  `json:"subject"`
	Tool            string  `json:"tool"`
	Method          string  `json:"method"`
	Outcome         string  `json:"outcome"`
	Reason          string  `json:"reason,omitempty"`
	DurationMS      float64 `json:"duration_ms"`
	Revision        string  `json:"revision"`
	ArgumentsSHA256 string  `json:"arguments_sha256"`
	ApprovalID      string  `json:"approval_id,omitempty"`
	ApprovedBy      string  `json:"approved_by,omitempty"`
}

// EventOf keeps of an audit record what the tail may show.
func EventOf(r audit.Record) Event {
	return Event{DecisionID: r.DecisionID, Timestamp: r.Timestamp, Subject: r.Subject, Tool: r.Tool, Method: r.Method,
		Outcome: r.Outcome, Reason: r.Reason, DurationMS: r.DurationMS, Revision: r.Revision,
		ArgumentsSHA256: r.ArgumentsSHA256, ApprovalID: r.ApprovalID, ApprovedBy: r.ApprovedBy}
}

// Activity fans the audit trail out to the console: a bounded ring of the
// latest events and live subscribers. Publishing never blocks and costs
// the same whatever the number of subscribers: it writes the ring and
// wakes every subscriber at once (one channel closed); each subscriber
// then reads what it has not seen from the ring, under the same mutex,
// on its own goroutine. A subscriber that fell further behind than the
// ring holds is dropped (its stream ends, the page reconnects). It also
// remembers the callers seen, for the matrix. Safe for concurrent use.
type Activity struct {
	mu    sync.Mutex
	ring  []Event
	next  int // where the next event goes in ring
	full  bool
	seq   uint64
	queue uint64        // approval-queue changes so far
	wake  chan struct{} // closed (and replaced) at each event or change
	subs  int
	seen  []toolcall.Caller
	seenK map[string]bool
}

// subscriber is where a live stream is in the Activity: the last event
// and queue change it was given.
type subscriber struct {
	seq, queue uint64
	wake       chan struct{}
}

// NewActivity returns an Activity keeping the latest backlog events
// (DefaultBacklog when backlog <= 0).
func NewActivity(backlog int) *Activity {
	if backlog <= 0 {
		backlog = DefaultBacklog
	}
	return &Activity{ring: make([]Event, backlog), wake: make(chan struct{}), seenK: map[string]bool{}}
}

// Hook returns the after hook that publishes each finished call. It is
// prompt (hooks.Hook.Prompt): publishing takes a mutex for a
// constant time and never waits on a subscriber, so it runs on the
// call's goroutine.
func (a *Activity) Hook() hooks.Hook {
	return hooks.Hook{Name: HookName, Prompt: true, After: func(_ context.Context, call *hooks.CallContext, end *hooks.Record) error {
		a.see(call.Caller)
		a.Publish(EventOf(audit.NewRecord(call, end)))
		return nil
	}}
}

func (a *Activity) see(c *toolcall.Caller) {
	if c == nil || c.Subject == "" {
		return
	}
	k := callerKey(c)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.seenK[k] || len(a.seen) >= maxSeen {
		return
	}
	a.seenK[k] = true
	a.seen = append(a.seen, toolcall.Caller{Subject: c.Subject, Roles: slices.Clone(c.Roles)})
}

// Seen returns the callers seen since start (subject and roles), in the
// order first seen, at most 1000.
func (a *Activity) Seen() []toolcall.Caller {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.seen)
}

// Publish adds an event (its Seq is set) and wakes every subscriber.
func (a *Activity) Publish(e Event) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.seq++
	e.Seq = a.seq
	a.ring[a.next] = e
	a.next = (a.next + 1) % len(a.ring)
	a.full = a.full || a.next == 0
	if e.Outcome == string(toolcall.OutcomeHeld) || e.ApprovalID != "" {
		a.queue++
	}
	a.wakeLocked()
}

// approvalsChanged tells subscribers the queue changed (a decision).
func (a *Activity) approvalsChanged() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.queue++
	a.wakeLocked()
}

func (a *Activity) wakeLocked() {
	if a.subs == 0 {
		return // nobody waits: no channel to replace
	}
	close(a.wake)
	a.wake = make(chan struct{})
}

// Backlog returns the events kept, oldest first.
func (a *Activity) Backlog() []Event {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.backlog()
}

func (a *Activity) backlog() []Event {
	if !a.full {
		return slices.Clone(a.ring[:a.next])
	}
	return append(slices.Clone(a.ring[a.next:]), a.ring[:a.next]...)
}

// subscribe returns the backlog and a subscription taken at the same
// instant, so no event is missed or seen twice; nil when max (> 0)
// subscriptions are live.
func (a *Activity) subscribe(max int) ([]Event, *subscriber) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if max > 0 && a.subs >= max {
		return nil, nil
	}
	a.subs++
	return a.backlog(), &subscriber{seq: a.seq, queue: a.queue, wake: a.wake}
}

func (a *Activity) unsubscribe(*subscriber) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.subs--
}

// since returns, for s, the events published since it last looked (with
// events false: none, only whether the queue changed) and moves it on;
// behind reports that more were published than the ring holds.
func (a *Activity) since(s *subscriber, events bool) (evs []Event, queueChanged, behind bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	queueChanged = a.queue != s.queue
	n := a.seq - s.seq
	if events && n > 0 {
		if n > uint64(len(a.ring)) {
			return nil, queueChanged, true
		}
		evs = make([]Event, 0, n)
		start := (a.next - int(n) + len(a.ring)) % len(a.ring)
		for i := range int(n) {
			evs = append(evs, a.ring[(start+i)%len(a.ring)])
		}
	}
	s.seq, s.queue, s.wake = a.seq, a.queue, a.wake
	return evs, queueChanged, false
}

// Subscribers is the number of live streams.
func (a *Activity) Subscribers() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.subs
}

// filter is the query of GET /console/api/activity.
type filter struct{ subject, tool, outcome string }

func (f filter) match(e *Event) bool {
	return (f.subject == "" || e.Subject == f.subject) && (f.tool == "" || e.Tool == f.tool) && (f.outcome == "" || e.Outcome == f.outcome)
}

// keepAlive is how often an idle stream sends a comment, so proxies and
// load balancers do not take it for a dead connection.
const keepAlive = 25 * time.Second

// activity streams the tail as server-sent events: the backlog, then each
// event as it happens ("event: activity"), and "event: approvals" when the
// approval queue changed.
func (c *Console) activity(w http.ResponseWriter, r *http.Request, _ *toolcall.Caller, _ bool) {
	q := r.URL.Query()
	c.stream(w, r, &filter{subject: q.Get("subject"), tool: q.Get("tool"), outcome: q.Get("outcome")})
}

// approvalEvents streams only "event: approvals" (the queue changed, no
// content: the page reads GET /console/api/approvals again), for an
// operator or an approver (Options.Approver). Anyone else holds no
// stream: 204 with Retry-After, after which the page reads the list and
// asks again (a role may have become an approver's meanwhile).
func (c *Console) approvalEvents(w http.ResponseWriter, r *http.Request, caller *toolcall.Caller, op bool) {
	if !op && (c.opts.Approver == nil || !c.opts.Approver(r.Context(), caller)) {
		w.Header().Set("Retry-After", strconv.Itoa(notApproverRetry))
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusNoContent)
		return
	}
	c.stream(w, r, nil)
}

// notApproverRetry is the Retry-After, in seconds, of the approval
// events refused to a caller who is not an approver.
const notApproverRetry = 10

// stream serves one subscription; f nil sends no activity events. A
// stream counts against the caller's streams on the server
// (Options.OpenStream) and the console's (Options.MaxSubscribers).
func (c *Console) stream(w http.ResponseWriter, r *http.Request, f *filter) {
	fl, ok := w.(http.Flusher)
	if !ok {
		httpError(w, http.StatusInternalServerError, "streaming is not supported")
		return
	}
	if c.opts.OpenStream != nil {
		release, err := c.opts.OpenStream(r)
		if err != nil {
			w.Header().Set("Retry-After", "30")
			httpError(w, http.StatusTooManyRequests, err.Error())
			return
		}
		defer release()
	}
	backlog, sub := c.opts.Activity.subscribe(c.opts.MaxSubscribers)
	if sub == nil {
		w.Header().Set("Retry-After", "30")
		httpError(w, http.StatusServiceUnavailable, "too many live streams")
		return
	}
	defer c.opts.Activity.unsubscribe(sub)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	write := func(e *Event) bool {
		if f == nil || !f.match(e) {
			return true
		}
		data, _ := json.Marshal(e)
		_, err := fmt.Fprintf(w, "id: %d\nevent: activity\ndata: %s\n\n", e.Seq, data)
		return err == nil
	}
	_, _ = fmt.Fprint(w, ": toolgate console\n\n")
	for i := range backlog {
		if !write(&backlog[i]) {
			return
		}
	}
	fl.Flush()
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	life := time.NewTimer(c.opts.StreamLifetime)
	defer life.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-life.C:
			return // the page reconnects, with its credential checked again
		case <-c.opts.Done:
			return
		case <-tick.C:
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return
			}
			fl.Flush()
		case <-sub.wake:
			evs, queued, behind := c.opts.Activity.since(sub, f != nil)
			if behind {
				return // too slow: dropped, the page reconnects
			}
			if queued {
				if _, err := fmt.Fprint(w, "event: approvals\ndata: {}\n\n"); err != nil {
					return
				}
			}
			for i := range evs {
				if !write(&evs[i]) {
					return
				}
			}
			fl.Flush()
		}
	}
}
