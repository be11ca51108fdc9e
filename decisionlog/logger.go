package decisionlog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolgate/toolgate/internal/backoff"
)

// Defaults of Options.
const (
	DefaultBufferSize    = 10000
	DefaultBufferBytes   = 64 << 20
	DefaultBatchSize     = 500
	DefaultBatchBytes    = 1 << 20
	DefaultFlushInterval = time.Second
	DefaultBundleName    = "toolgate"
	DefaultHTTPTimeout   = 10 * time.Second
)

// Options configure a Logger. The zero value takes every default.
type Options struct {
	// Labels are every event's labels (OPA sends id and version).
	Labels map[string]string
	// BundleName names the bundle in an event's bundles; "" is
	// DefaultBundleName.
	BundleName string
	// BufferSize bounds the events waiting to be written, those of a batch
	// being retried included; an event beyond it is dropped and counted.
	BufferSize int
	// BufferBytes bounds the same events in bytes of JSON: an event is as
	// large as its caller makes it (argument names are kept), so a count
	// alone does not bound the memory while the sink is down. An event
	// beyond it is dropped and counted.
	BufferBytes int
	// BatchSize and BatchBytes bound one write: at most BatchSize events and,
	// past the first event, at most BatchBytes bytes of JSON before gzip.
	BatchSize  int
	BatchBytes int
	// FlushInterval is how long an event may wait for its batch to fill.
	FlushInterval time.Duration
	// Backoff is the wait before retry number attempt (1, 2, …) of a failed
	// write; nil is exponential from 100 ms to 30 s with jitter.
	Backoff func(attempt int) time.Duration
	// Client posts to a URL sink; nil is a client with DefaultHTTPTimeout.
	Client *http.Client
	// OnDrop is told of each dropped event (for example a metrics counter).
	OnDrop func()
	// Logger receives write failures; nil discards them.
	Logger *slog.Logger
	// HashKey, when not empty, keys the hashes of argument and _meta
	// values: HMAC-SHA256 instead of SHA-256, so a reader of the log
	// without the key cannot test guesses (an amount, a yes/no) against
	// them. Events then say "hash": "hmac-sha256" in input.request.
	HashKey []byte
	// HistoryEntries writes the entries of the caller's history a
	// decision read into its event (input.history.read), besides their
	// count and hash; off, their values never reach the log.
	HistoryEntries bool
}

// Sink writes one batch of encoded events. It is called from one goroutine
// at a time; a batch it fails is offered again, whole, after a backoff.
type Sink interface {
	Write(ctx context.Context, events []json.RawMessage) error
	Close() error
}

// Logger buffers decision-log events and writes them to its sink in batches
// from one background goroutine, retrying failed writes with backoff. Log
// never blocks on the sink. All methods are safe for concurrent use; a nil
// *Logger logs nothing.
type Logger struct {
	sink Sink
	opts Options
	log  *slog.Logger

	mu      sync.Mutex
	buf     []json.RawMessage // waiting, oldest first; a batch leaves it once written
	bufSize int               // bytes in buf
	closed  bool
	dropped atomic.Uint64
	written atomic.Uint64

	wake   chan struct{}
	stop   chan context.Context
	done   chan struct{}
	ctx    context.Context // canceled when Close's context ends
	cancel context.CancelFunc
}

// Open returns a Logger writing to target: an http:// or https:// URL is
// POSTed gzip-compressed JSON arrays (OPA's upload format), anything else is
// a file path appended one JSON event per line (created 0600).
func Open(target string, opts Options) (*Logger, error) {
	if IsURL(target) {
		c := opts.Client
		if c == nil {
			c = &http.Client{Timeout: DefaultHTTPTimeout}
		}
		return New(&HTTPSink{URL: target, Client: c}, opts), nil
	}
	s, err := OpenFile(target)
	if err != nil {
		return nil, err
	}
	return New(s, opts), nil
}

// New returns a Logger writing to sink, and starts its goroutine; Close
// stops it.
func New(sink Sink, opts Options) *Logger {
	if opts.BufferSize <= 0 {
		opts.BufferSize = DefaultBufferSize
	}
	if opts.BufferBytes <= 0 {
		opts.BufferBytes = DefaultBufferBytes
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = DefaultBatchSize
	}
	if opts.BatchBytes <= 0 {
		opts.BatchBytes = DefaultBatchBytes
	}
	if opts.FlushInterval <= 0 {
		opts.FlushInterval = DefaultFlushInterval
	}
	if opts.Backoff == nil {
		opts.Backoff = DefaultBackoff
	}
	if opts.BundleName == "" {
		opts.BundleName = DefaultBundleName
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &Logger{sink: sink, opts: opts, log: log,
		wake: make(chan struct{}, 1), stop: make(chan context.Context, 1), done: make(chan struct{}),
		ctx: ctx, cancel: cancel}
	go l.run()
	return l
}

// DefaultBackoff is exponential from 100 ms, doubling to at most 30 s, with
// up to 20% jitter.
func DefaultBackoff(attempt int) time.Duration {
	d := backoff.Exponential(100*time.Millisecond, 30*time.Second, attempt)
	return d + time.Duration(rand.Int64N(int64(d)/5+1))
}

// Log buffers the event of one decision. When the buffer is full, or the
// Logger is closed, the event is dropped and counted.
func (l *Logger) Log(d Decision) {
	if l == nil {
		return
	}
	line, err := json.Marshal(d.event(l.opts.Labels, l.opts.BundleName, time.Now(), hasher{key: l.opts.HashKey}, l.opts.HistoryEntries))
	if err != nil {
		l.log.Error("decision log: event not encoded", "decision_id", d.ID, "error", err)
		l.drop(1)
		return
	}
	l.mu.Lock()
	if l.closed || len(l.buf) >= l.opts.BufferSize || l.bufSize+len(line) > l.opts.BufferBytes {
		l.mu.Unlock()
		l.drop(1)
		return
	}
	l.buf = append(l.buf, line)
	l.bufSize += len(line)
	full := len(l.buf) >= l.opts.BatchSize
	l.mu.Unlock()
	if full {
		select {
		case l.wake <- struct{}{}:
		default:
		}
	}
}

// Dropped is the number of events dropped so far: buffer full, not
// encodable, logged after Close, or still unwritten when Close gave up.
func (l *Logger) Dropped() uint64 {
	if l == nil {
		return 0
	}
	return l.dropped.Load()
}

// Written is the number of events the sink accepted so far.
func (l *Logger) Written() uint64 {
	if l == nil {
		return 0
	}
	return l.written.Load()
}

// Close stops taking events, writes what is buffered (retrying until ctx
// ends), counts what it could not write as dropped, and closes the sink.
// Calls after the first return nil at once.
func (l *Logger) Close(ctx context.Context) error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.mu.Unlock()
	stopAfter := context.AfterFunc(ctx, l.cancel)
	defer stopAfter()
	l.stop <- ctx
	<-l.done
	l.cancel()
	var err error
	if n := l.pending(); n > 0 {
		l.drop(n)
		err = fmt.Errorf("decision log: %d events not written before close: %w", n, context.Cause(ctx))
	}
	return errors.Join(err, l.sink.Close())
}

func (l *Logger) drop(n int) {
	l.dropped.Add(uint64(n))
	if l.opts.OnDrop != nil {
		for range n {
			l.opts.OnDrop()
		}
	}
}

func (l *Logger) pending() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(l.buf)
	l.buf, l.bufSize = nil, 0
	return n
}

// run writes batches: when a batch is full, every FlushInterval, and once
// more on Close.
func (l *Logger) run() {
	defer close(l.done)
	tick := time.NewTicker(l.opts.FlushInterval)
	defer tick.Stop()
	for {
		closing := false
		select {
		case <-l.wake:
		case <-tick.C:
		case <-l.stop:
			closing = true
		}
		if l.flush(closing) || closing {
			return
		}
	}
}

// flush writes batches until the buffer is empty. It reports whether Close
// was asked meanwhile (so run returns once flush is done); while closing it
// gives up when Close's context ends.
func (l *Logger) flush(closing bool) bool {
	attempt := 0
	for {
		batch := l.peek()
		if len(batch) == 0 {
			return closing
		}
		err := l.sink.Write(l.ctx, batch)
		if err == nil {
			attempt = 0
			l.remove(len(batch))
			l.written.Add(uint64(len(batch)))
			continue
		}
		if l.ctx.Err() != nil {
			return true
		}
		attempt++
		d := l.opts.Backoff(attempt)
		l.log.Warn("decision log: write failed, retrying", "events", len(batch), "attempt", attempt, "backoff", d, "error", err)
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-l.stop:
			t.Stop()
			closing = true
		case <-l.ctx.Done():
			t.Stop()
			return true
		}
	}
}

// peek returns the next batch without taking it out of the buffer.
func (l *Logger) peek() []json.RawMessage {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, size := 0, 0
	for n < len(l.buf) && n < l.opts.BatchSize {
		size += len(l.buf[n]) + 1
		if n > 0 && size > l.opts.BatchBytes {
			break
		}
		n++
	}
	return append([]json.RawMessage(nil), l.buf[:n]...)
}

func (l *Logger) remove(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.buf[:n] {
		l.bufSize -= len(e)
	}
	l.buf = l.buf[n:]
}
