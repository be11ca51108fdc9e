package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/internal/canon"
	"github.com/toolgate/toolgate/toolcall"
)

// Defaults of Options.
const (
	DefaultBuffer       = 1024
	DefaultCloseTimeout = 5 * time.Second
	// HookName is the name the audit hook registers under.
	HookName = "audit"
)

// Record is one line of the audit trail (docs/contract.md §10). It never holds argument
// values (only their hash) nor credentials.
type Record struct {
	DecisionID string `json:"decision_id"`
	// Timestamp is when the adapter began handling the call, RFC 3339 with
	// nanoseconds, UTC.
	Timestamp string `json:"timestamp"`
	Subject   string `json:"subject"`
	// Tool is the tool name as sent.
	Tool string `json:"tool"`
	// Method is the row's method; "" when the call was refused at step 3.
	Method  string `json:"method"`
	Outcome string `json:"outcome"`
	// Reason is the deny reasons joined by "; ", or "".
	Reason string `json:"reason"`
	// Error is the server-side detail of a failure, or "".
	Error      string  `json:"error"`
	DurationMS float64 `json:"duration_ms"`
	// Revision is the revision every decision of the call read, as
	// engine.Revision.String() writes it ("number/short hash").
	Revision string `json:"revision"`
	// Meta is the bounded _meta, entries as sent.
	Meta json.RawMessage `json:"meta"`
	// ArgumentsSHA256 is the hex SHA-256 of the canonical arguments JSON
	// (keys sorted, numbers as sent), as the ledger compares them.
	ArgumentsSHA256 string `json:"arguments_sha256"`
	// ApprovalID is the approval request the call was held for, told was
	// refused, or consumed (docs/contract.md §13); omitted when none was asked.
	ApprovalID string `json:"approval_id,omitempty"`
	// ApprovedBy is the approver whose approval the call consumed.
	ApprovedBy string `json:"approved_by,omitempty"`

	// The fields below add to docs/contract.md §10's: how the call was decided, read
	// from the adapter's Record.

	// Stage is the step of docs/contract.md §5 at which the call was decided
	// (toolcall.Stage: run, denied, held, answered, arguments,
	// rule_failed, hook_failed, not_verified).
	Stage string `json:"stage"`
	// Grant is how the grant decision came out: no_override (the base
	// decision stood), override (the policy's granted set decided) or
	// failed.
	Grant string `json:"grant"`
	// Rules are the rules (file:line) behind the answer: each deny
	// reason's, the approval's or the answering result's, or where a
	// policy failed; omitted when none did (the base decision, a hook or
	// the method).
	Rules []string `json:"rules,omitempty"`
	// Denials are the deny reasons one by one with who gave each: a hook
	// by name, or rules by file:line; omitted when nothing refused.
	Denials []Denial `json:"denials,omitempty"`
	// TraceID is the W3C trace id of the call's span when tracing is on
	// (docs/contract.md §14); omitted otherwise.
	TraceID string `json:"trace_id,omitempty"`
}

// Denial is one deny reason of a Record.
type Denial struct {
	Reason string `json:"reason"`
	// Hook is the before hook that gave it; omitted for a rule.
	Hook string `json:"hook,omitempty"`
	// Rules are the rules (file:line) that produced it.
	Rules []string `json:"rules,omitempty"`
}

// NewRecord builds the audit record of one finished call from its
// context and the adapter's record of it.
func NewRecord(call *hooks.CallContext, end *hooks.Record) Record {
	r := Record{
		Stage:           string(end.Stage),
		Grant:           end.Grant.Outcome.String(),
		Rules:           locations(end.DecidingRules()),
		DecisionID:      call.DecisionID,
		Timestamp:       call.Start.UTC().Format(time.RFC3339Nano),
		Tool:            call.Name,
		Method:          call.Method,
		Outcome:         string(end.Outcome),
		Reason:          strings.Join(end.Reasons(), "; "),
		DurationMS:      end.DurationMS(),
		Meta:            json.RawMessage(`{}`),
		ArgumentsSHA256: canon.SHA256(call.Arguments),
		ApprovalID:      end.ApprovalID,
		ApprovedBy:      end.ApprovedBy,
	}
	if call.Caller != nil {
		r.Subject = call.Caller.Subject
	}
	if end.Err != nil {
		r.Error = end.Err.Error()
	}
	if call.Revision != nil {
		r.Revision = revisionName(call.Revision)
	}
	if m, err := call.Meta.MarshalJSON(); err == nil {
		r.Meta = m
	}
	for _, d := range end.Denials {
		r.Denials = append(r.Denials, Denial{Reason: d.Reason, Hook: d.Hook, Rules: locations(d.Rules)})
	}
	return r
}

// lastRevision is the revision the last record named, with its name:
// every call between two reloads reads the same one, and its name is
// formatted once. It keeps at most that one revision alive.
var lastRevision atomic.Pointer[namedRevision]

type namedRevision struct {
	rev  toolcall.Revision
	name string
}

// revisionName is rev.String(), formatted once per revision.
func revisionName(rev toolcall.Revision) string {
	if n := lastRevision.Load(); n != nil && n.rev == rev {
		return n.name
	}
	n := &namedRevision{rev: rev, name: rev.String()}
	lastRevision.Store(n)
	return n.name
}

// locations renders rule locations as file:line; nil for none.
func locations(ls []toolcall.Location) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.String())
	}
	return out
}

// Options configure an Auditor. The zero value takes every default.
type Options struct {
	// Buffer is how many records may wait for the writer; DefaultBuffer when
	// zero. A record that finds the buffer full is dropped.
	Buffer int
	// CloseTimeout bounds how long Close waits for the writer to drain the
	// buffer; DefaultCloseTimeout when zero.
	CloseTimeout time.Duration
	// Logger receives drops and write failures (at most one line a second);
	// nil discards them.
	Logger *slog.Logger
	// OnDrop, when set, is called once for each dropped record (a metrics
	// counter).
	OnDrop func()
}

// Auditor writes the audit trail as JSON Lines: one record per call that
// reached docs/contract.md §5 step 5 or was refused at step 3. Records go through a
// bounded buffer to one writer goroutine, so a writer that fails or blocks
// never delays or breaks a call: records that cannot be written are dropped,
// counted and logged. An Auditor is safe for concurrent use; Close it to
// flush.
type Auditor struct {
	w    io.Writer
	opts Options
	log  *slog.Logger

	mu     sync.RWMutex // guards closed against sends on a closed ch
	closed bool
	ch     chan *line
	done   chan struct{}

	closeOnce sync.Once
	closeErr  error

	dropped atomic.Uint64
	lastLog atomic.Int64     // unix nanos of the last drop log line
	now     func() time.Time // the clock of the drop log's limit (tests set it)
}

// New starts an Auditor writing to w. Each record is one Write of one line.
// The Auditor does not close w.
func New(w io.Writer, opts Options) *Auditor {
	if opts.Buffer <= 0 {
		opts.Buffer = DefaultBuffer
	}
	if opts.CloseTimeout <= 0 {
		opts.CloseTimeout = DefaultCloseTimeout
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	a := &Auditor{w: w, opts: opts, log: log, ch: make(chan *line, opts.Buffer), done: make(chan struct{}), now: time.Now}
	go a.write()
	return a
}

// Hook returns the audit trail's after hook, named HookName. It is Prompt:
// it encodes the record (as json.Marshal would, without its reflection)
// and hands it to the writer without waiting.
func (a *Auditor) Hook() hooks.Hook {
	return hooks.Hook{Name: HookName, After: a.after, Prompt: true}
}

// Dropped is the number of records dropped so far: buffer full, write
// failed, or written after Close.
func (a *Auditor) Dropped() uint64 { return a.dropped.Load() }

func (a *Auditor) after(ctx context.Context, call *hooks.CallContext, end *hooks.Record) error {
	r := NewRecord(call, end)
	if sc := trace.SpanContextFromContext(ctx); sc.HasTraceID() {
		r.TraceID = sc.TraceID().String()
	}
	a.enqueue(&r)
	return nil
}

// enqueue encodes r and hands it to the writer, or drops it.
func (a *Auditor) enqueue(r *Record) {
	l := getLine()
	b, err := appendRecord(l.b[:0], r)
	if err != nil {
		putLine(l)
		a.drop(1, "encode", err)
		return
	}
	l.b = append(b, '\n')
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.closed {
		putLine(l)
		a.drop(1, "auditor closed", nil)
		return
	}
	select {
	case a.ch <- l:
	default:
		putLine(l)
		a.drop(1, "buffer full", nil)
	}
}

func (a *Auditor) write() {
	defer close(a.done)
	for l := range a.ch {
		// io.Writer: Write must not retain the line, so it is reused.
		if _, err := a.w.Write(l.b); err != nil {
			a.drop(1, "write failed", err)
		}
		putLine(l)
	}
}

func (a *Auditor) drop(n int, why string, err error) {
	total := a.dropped.Add(uint64(n))
	if a.opts.OnDrop != nil {
		for range n {
			a.opts.OnDrop()
		}
	}
	now := a.now().UnixNano()
	last := a.lastLog.Load()
	if now-last < int64(time.Second) || !a.lastLog.CompareAndSwap(last, now) {
		return
	}
	attrs := []any{slog.String("why", why), slog.Uint64("dropped_total", total)}
	if err != nil {
		attrs = append(attrs, slog.Any("error", err))
	}
	a.log.Error("audit: records dropped", attrs...)
}

// Close stops accepting records and waits, at most Options.CloseTimeout, for
// the writer to write those buffered. Records it could not write in time are
// dropped and reported in the error. Close is idempotent.
func (a *Auditor) Close() error {
	a.closeOnce.Do(func() {
		a.mu.Lock()
		a.closed = true
		close(a.ch)
		a.mu.Unlock()
		timer := time.NewTimer(a.opts.CloseTimeout)
		defer timer.Stop()
		select {
		case <-a.done:
		case <-timer.C:
			// The writer is stuck in Write: take back what it has not read.
			n := 0
			for range a.ch {
				n++
			}
			a.drop(n, "writer blocked at close", nil)
			a.closeErr = fmt.Errorf("audit: the writer did not finish within %s; %d buffered records dropped", a.opts.CloseTimeout, n)
		}
	})
	return a.closeErr
}
