package approvals

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/toolgate/toolgate/internal/servesettings"
)

// Defaults of WebhookOptions.
const (
	DefaultWebhookTimeout  = 5 * time.Second
	DefaultWebhookAttempts = 3
	DefaultWebhookBackoff  = time.Second
	DefaultWebhookQueue    = 256
)

// WebhookOptions configure a Webhook. The zero value takes every default.
type WebhookOptions struct {
	// Client sends the requests; http.DefaultClient's transport when nil.
	Client *http.Client
	// Timeout bounds one attempt; DefaultWebhookTimeout when zero.
	Timeout time.Duration
	// Attempts is how often one request is tried; DefaultWebhookAttempts
	// when zero.
	Attempts int
	// Backoff is the wait before the second attempt, doubled for each
	// further one; DefaultWebhookBackoff when zero.
	Backoff time.Duration
	// Queue bounds the requests waiting to be sent: beyond it new
	// requests are coalesced, counted and announced by one summary event
	// (Coalesced) once the queue drained; DefaultWebhookQueue when zero.
	Queue int
	// OnResult, when set, counts each outcome: WebhookSent and
	// WebhookFailed per event posted (a summary is one event),
	// WebhookCoalesced per request folded into a summary.
	OnResult func(result string)
	// Logger receives failures; nil discards them.
	Logger *slog.Logger
}

// The outcomes WebhookOptions.OnResult counts
// (toolgate_approval_webhook_total{result}).
const (
	WebhookSent      = "sent"
	WebhookFailed    = "failed"
	WebhookCoalesced = "coalesced"
)

// WebhookEvent is what the webhook receives for each new request: no
// arguments (they stay in the store, for approvers who sign in). A
// summary of requests the queue had no room for has only Coalesced (how
// many) and Text.
type WebhookEvent struct {
	ID        string    `json:"id,omitempty"`
	Source    string    `json:"source,omitempty"`
	Subject   string    `json:"subject,omitempty"`
	Tool      string    `json:"tool,omitempty"`
	Reason    string    `json:"reason,omitempty"`
	Approvers []string  `json:"approvers,omitempty"`
	Expires   time.Time `json:"expires,omitzero"`
	Coalesced int       `json:"coalesced,omitempty"`
	// Text says the same for a chat message, with every character a
	// reader could not see escaped (Visible).
	Text string `json:"text"`
}

// eventOf is what the webhook is sent for r.
func eventOf(r Request) WebhookEvent {
	return WebhookEvent{ID: r.ID, Source: r.Source, Subject: r.Subject, Tool: r.Tool, Reason: r.Reason, Approvers: r.Approvers, Expires: r.Expires,
		Text: fmt.Sprintf("Approval %s requested: %s by %s: %s", Visible(r.ID), Visible(r.Tool), Visible(r.Subject), Visible(r.Reason))}
}

// webhookBody is ev as JSON, with invisible characters escaped inside its
// strings (VisibleJSON): the same value, which a person reading the
// payload sees whole.
func webhookBody(ev WebhookEvent) []byte {
	body, _ := json.Marshal(ev)
	return VisibleJSON(body)
}

// Webhook POSTs each new approval request as JSON to a URL, from a
// goroutine of its own: Notify never blocks, and a webhook that fails or
// hangs never holds or fails a call (the request stays pending and
// listable). Close stops it.
type Webhook struct {
	url   string
	opts  WebhookOptions
	log   *slog.Logger
	queue chan WebhookEvent
	stop  context.CancelFunc
	ctx   context.Context
	done  sync.WaitGroup

	mu        sync.Mutex
	coalesced int // requests not queued since the last summary
}

// summaryOf is the event that announces n requests the queue had no
// room for.
func summaryOf(n int) WebhookEvent {
	return WebhookEvent{Coalesced: n, Text: fmt.Sprintf("%d more approval requests were made while the webhook was behind; list them with GET /approvals or in the console.", n)}
}

// CheckWebhookURL reports what is wrong with a webhook's URL: it is an
// http:// or https:// URL with a host.
func CheckWebhookURL(v string) error { return servesettings.CheckWebhookURL(v) }

// NewWebhook starts a webhook sender for url (CheckWebhookURL).
func NewWebhook(url string, opts WebhookOptions) *Webhook {
	if opts.Client == nil {
		opts.Client = &http.Client{}
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultWebhookTimeout
	}
	if opts.Attempts <= 0 {
		opts.Attempts = DefaultWebhookAttempts
	}
	if opts.Backoff <= 0 {
		opts.Backoff = DefaultWebhookBackoff
	}
	if opts.Queue <= 0 {
		opts.Queue = DefaultWebhookQueue
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	w := &Webhook{url: url, opts: opts, log: log, queue: make(chan WebhookEvent, opts.Queue)}
	w.ctx, w.stop = context.WithCancel(context.Background())
	w.done.Add(1)
	go w.run()
	return w
}

// Notify queues r to be sent; it never blocks. It is an Options.OnRequest.
func (w *Webhook) Notify(r Request) {
	ev := eventOf(r)
	select {
	case w.queue <- ev:
	default:
		w.mu.Lock()
		w.coalesced++
		w.mu.Unlock()
		w.result(WebhookCoalesced)
		w.log.Warn("approvals: webhook queue full; the request is announced in a summary", slog.String("approval_id", r.ID))
	}
}

func (w *Webhook) result(r string) {
	if w.opts.OnResult != nil {
		w.opts.OnResult(r)
	}
}

// Close stops sending; requests still queued are not sent.
func (w *Webhook) Close() error {
	w.stop()
	w.done.Wait()
	return nil
}

func (w *Webhook) run() {
	defer w.done.Done()
	for {
		select {
		case <-w.ctx.Done():
			return
		case ev := <-w.queue:
			w.send(ev)
			if len(w.queue) == 0 {
				w.mu.Lock()
				n := w.coalesced
				w.coalesced = 0
				w.mu.Unlock()
				if n > 0 {
					w.send(summaryOf(n))
				}
			}
		}
	}
}

// send tries ev up to Attempts times; a 2xx answer ends it.
func (w *Webhook) send(ev WebhookEvent) {
	body := webhookBody(ev)
	wait := w.opts.Backoff
	var err error
	for attempt := 1; attempt <= w.opts.Attempts; attempt++ {
		if err = w.post(body); err == nil {
			w.result(WebhookSent)
			return
		}
		if attempt == w.opts.Attempts {
			break
		}
		t := time.NewTimer(wait)
		select {
		case <-w.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		wait *= 2
	}
	w.result(WebhookFailed)
	w.log.Warn("approvals: webhook failed; the request stays pending and listable",
		slog.String("approval_id", ev.ID), slog.Any("error", err))
}

func (w *Webhook) post(body []byte) error {
	ctx, cancel := context.WithTimeout(w.ctx, w.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := w.opts.Client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL may hold a secret (chat webhooks do): never logged
		}
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("webhook answered %s", resp.Status)
	}
	return nil
}
