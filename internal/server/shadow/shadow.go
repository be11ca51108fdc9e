// Package shadow decides every grant and call decision a gateway takes a
// second time, with a candidate revision (another policy, optionally
// another registry), off the request path, and records where the two
// differ (docs/shadow.md): a decision-log event at path
// toolgate/shadow/call or toolgate/shadow/list carrying both results and
// the rules that decided each, and the counter
// toolgate_shadow_differences_total{kind}. A decision the candidate fails
// to take (an evaluation error or timeout) is no difference: it is counted
// apart (toolgate_shadow_candidate_failures_total, Status.Failures).
//
// The serving answer is never changed or slowed: the observer copies
// what it needs onto a small bounded queue and returns; a full queue
// drops the comparison and counts it (toolgate_shadow_dropped_total). One
// worker decides with the candidate and is paced: after a comparison that
// took d it rests d×(1/Share−1), so that the candidate uses at most Share
// of one core whatever it costs; what arrives meanwhile waits on the
// queue or is dropped. The candidate
// decides with the engine calls the served pipeline makes (steps 3 to 5:
// Revision.Grant, GrantDecision.Allowed, Revision.Call); the rules are
// located (Revision.Explain) only for a difference.
package shadow

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolgate/toolgate/decisionlog"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/toolcall"
)

// Kinds of difference (the counter's kind label).
const (
	GrantedHidden   = "granted→hidden"
	HiddenGranted   = "hidden→granted"
	AllowedDenied   = "allowed→denied"
	DeniedAllowed   = "denied→allowed"
	AnswerChanged   = "answer changed"
	ApprovalChanged = "approval changed"
)

// Kinds are every kind, in a stable order.
var Kinds = []string{GrantedHidden, HiddenGranted, AllowedDenied, DeniedAllowed, AnswerChanged, ApprovalChanged}

// Paths of the decision-log events.
const (
	PathCall = "toolgate/shadow/call"
	PathList = "toolgate/shadow/list"
)

// DefaultQueueSize bounds the comparisons waiting for the worker: small,
// since a candidate that cannot keep up is better measured by what it
// drops than queued behind.
const DefaultQueueSize = 64

// DefaultShare is the share of one core the worker's comparisons take at
// most (Options.Share).
const DefaultShare = 0.25

// Side is one revision's decision of one call (or one tool of a listing).
type Side struct {
	Revision string `json:"revision"`
	// Granted is the grant decision for the tool (strict for a call,
	// lenient for a listing).
	Granted bool `json:"granted"`
	// GrantRules are the rules that defined an override.
	GrantRules []engine.Location `json:"grant_rules,omitempty"`
	// Known says the toolgate.call rules were decided (a granted call
	// whose before hooks did not end it first).
	Known bool `json:"-"`
	// Deny are the deny reasons of the toolgate.call rules, with rules.
	Deny []engine.Reason `json:"deny,omitempty"`
	// Result is the result a rule answers with.
	Result json.RawMessage `json:"result,omitempty"`
	// ResultRules are the rules that defined Result.
	ResultRules []engine.Location `json:"result_rules,omitempty"`
	// Approval is the approval rule's value.
	Approval *engine.Approval `json:"approval,omitempty"`
	// Failure is a failed decision's error.
	Failure string `json:"failure,omitempty"`
}

// CallSide reads the Side of a call's Record (served or dry).
func CallSide(rev *engine.Revision, rec *hooks.Record) Side {
	s := Side{Granted: rec.Grant.Granted, GrantRules: rec.Grant.Rules}
	if rev != nil {
		s.Revision = rev.Hash()
	}
	if rec.Grant.Err != nil {
		s.Failure = rec.Grant.Err.Error()
	}
	if cd := rec.CallDecision; cd != nil && s.Granted {
		s.setCall(cd)
	}
	return s
}

// setCall records the toolgate.call rules' decision cd: deny reasons,
// approval, result and failure.
func (s *Side) setCall(cd *toolcall.CallDecision) {
	s.Known = true
	s.Deny, s.Approval, s.ResultRules = cd.Deny, cd.Approval, cd.ResultRules
	if len(cd.Result) > 0 {
		s.Result = json.RawMessage(cd.Result)
	}
	if cd.Err != nil {
		s.Failure = cd.Err.Error()
	}
}

// DiffKinds returns the kinds of difference from serving a to candidate b.
// A candidate that failed to decide (b.Failure) differs in nothing: its
// failure is counted apart, never as a refusal.
func DiffKinds(a, b Side) []string {
	switch {
	case b.Failure != "":
		return nil
	case a.Granted && !b.Granted:
		return []string{GrantedHidden}
	case !a.Granted && b.Granted:
		return []string{HiddenGranted}
	case !a.Granted || !a.Known || !b.Known:
		return nil
	}
	ad, bd := len(a.Deny) > 0 || a.Failure != "", len(b.Deny) > 0 || b.Failure != ""
	var out []string
	switch {
	case !ad && bd:
		out = append(out, AllowedDenied)
	case ad && !bd:
		out = append(out, DeniedAllowed)
	case !slices.EqualFunc(a.Deny, b.Deny, func(x, y engine.Reason) bool { return x.Message == y.Message }) ||
		!bytes.Equal(a.Result, b.Result) || a.Failure != b.Failure:
		out = append(out, AnswerChanged)
	}
	if !approvalEqual(a.Approval, b.Approval) {
		out = append(out, ApprovalChanged)
	}
	return out
}

func approvalEqual(a, b *engine.Approval) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Reason == b.Reason && a.TTL == b.TTL && slices.Equal(a.Approvers, b.Approvers)
}

// Difference is one recorded difference.
type Difference struct {
	Kind      string   `json:"kind"`
	Method    string   `json:"method"`
	Tool      string   `json:"tool"`
	Subject   string   `json:"subject"`
	Roles     []string `json:"roles"`
	Serving   Side     `json:"serving"`
	Candidate Side     `json:"candidate"`
}

// Options configure a Shadow.
type Options struct {
	// Candidate is the compiled candidate revision; nil with Err set: the
	// candidate failed to compile and is never evaluated.
	Candidate *engine.Revision
	// Engine, when set, is the candidate's engine instead: each comparison
	// takes its current revision (a candidate bundle kept current like the
	// serving one), and its last refused revision is in Status.Refused.
	Engine *engine.Engine
	// Err is why there is no candidate (it did not load or compile),
	// reported in Status.
	Err error
	// DecisionLog receives an event per difference; nil: none.
	DecisionLog *decisionlog.Logger
	// Registerer gets the counters; nil: not registered.
	Registerer prometheus.Registerer
	// Logger; nil discards.
	Logger *slog.Logger
	// QueueSize bounds the waiting comparisons; zero is DefaultQueueSize.
	QueueSize int
	// Share is the share of one core the candidate's comparisons take at
	// most, in (0, 1]; zero is DefaultShare. 1 is unpaced.
	Share float64
	// OnDifference, when set, hears of each difference (tests, the console).
	OnDifference func(Difference)
}

// Shadow compares decisions with a candidate. Start its worker with Run.
type Shadow struct {
	o       Options
	queue   chan func(context.Context)
	diffs   *prometheus.CounterVec
	dropped prometheus.Counter
	failed  prometheus.Counter
	refused prometheus.CounterFunc
	nDrop   atomic.Uint64
	nDone   atomic.Uint64
	nFail   atomic.Uint64
	// now and rest are the pacing's clock and wait (time.Now and a timer;
	// tests replace them).
	now    func() time.Time
	rest   func(context.Context, time.Duration)
	mu     sync.Mutex
	counts map[string]uint64
	idle   sync.WaitGroup
}

// New returns a Shadow for o.
func New(o Options) *Shadow {
	if o.QueueSize <= 0 {
		o.QueueSize = DefaultQueueSize
	}
	if !(o.Share > 0 && o.Share <= 1) {
		o.Share = DefaultShare
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Shadow{o: o, queue: make(chan func(context.Context), o.QueueSize), counts: map[string]uint64{}, now: time.Now, rest: sleep,
		diffs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toolgate_shadow_differences_total",
			Help: "Decisions the candidate policy takes differently from the serving one, by kind."}, []string{"kind"}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{Name: "toolgate_shadow_dropped_total",
			Help: "Decisions not compared with the candidate because the shadow queue was full."}),
		failed: prometheus.NewCounter(prometheus.CounterOpts{Name: "toolgate_shadow_candidate_failures_total",
			Help: "Decisions the shadow candidate failed to take (an evaluation error or timeout); not counted as differences."}),
	}
	s.refused = prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "toolgate_shadow_candidate_refused_total",
		Help: "Shadow candidates that did not load or compile (at start, or a later candidate bundle); they are never evaluated."},
		func() float64 {
			n := 0.0
			if o.Err != nil {
				n = 1
			}
			if o.Engine != nil {
				n += float64(o.Engine.Status().ReloadFailures)
			}
			return n
		})
	for _, k := range Kinds {
		s.diffs.WithLabelValues(k)
	}
	if o.Registerer != nil {
		o.Registerer.MustRegister(s.diffs, s.dropped, s.failed, s.refused)
	}
	if o.Err != nil {
		o.Logger.Error("shadow: the candidate does not load or compile; it is never evaluated", slog.Any("error", o.Err))
	}
	return s
}

// Run compares queued decisions, one at a time and paced (Options.Share),
// until ctx is done, then the ones still queued (at most the queue's
// size) unpaced, so that a gateway closing in order logs them before its
// decision log flushes. Run it once per Shadow.
func (s *Shadow) Run(ctx context.Context) {
	do := func(ctx context.Context, f func(context.Context)) time.Duration {
		start := s.now()
		f(ctx)
		took := s.now().Sub(start)
		s.nDone.Add(1)
		s.idle.Done()
		return took
	}
	for {
		select {
		case <-ctx.Done():
			rest := context.WithoutCancel(ctx)
			for {
				select {
				case f := <-s.queue:
					do(rest, f)
				default:
					return
				}
			}
		case f := <-s.queue:
			if took := do(ctx, f); took > 0 && s.o.Share < 1 {
				s.rest(ctx, time.Duration(float64(took)*(1/s.o.Share-1)))
			}
		}
	}
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// fail counts a decision the candidate failed to take.
func (s *Shadow) fail() {
	s.nFail.Add(1)
	s.failed.Inc()
}

// Wait returns once every comparison queued so far is done (tests).
func (s *Shadow) Wait() { s.idle.Wait() }

// candidate is the candidate revision now; nil: none, never evaluated.
func (s *Shadow) candidate() *engine.Revision {
	if s.o.Engine != nil {
		return s.o.Engine.Current()
	}
	return s.o.Candidate
}

func (s *Shadow) enqueue(f func(context.Context)) {
	if s.candidate() == nil {
		return
	}
	s.idle.Add(1)
	select {
	case s.queue <- f:
	default:
		s.idle.Done()
		s.nDrop.Add(1)
		s.dropped.Inc()
	}
}

// Observer is the hooks.Observer that queues each decision for
// comparison. It copies what it keeps and never blocks.
func (s *Shadow) Observer() hooks.Observer {
	return hooks.Observer{Name: "shadow", Call: s.observeCall, List: s.observeList}
}

func cloneCaller(c *toolcall.Caller) *toolcall.Caller {
	if c == nil {
		return nil
	}
	cp := *c
	cp.Roles = slices.Clone(c.Roles)
	return &cp // claims are never modified once built
}

func (s *Shadow) observeCall(_ context.Context, call *hooks.CallContext, rec *hooks.Record) {
	if s.candidate() == nil {
		return
	}
	rev, _ := call.Revision.(*engine.Revision) // the adapter's revisions are the engine's
	serving := CallSide(rev, rec)
	caller := cloneCaller(call.Caller)
	name, args := call.Name, slices.Clone(call.Arguments)
	meta, _ := call.Meta.MarshalJSON()
	s.enqueue(func(ctx context.Context) {
		b, locate := s.decideCall(ctx, caller, name, args, meta, serving.Known)
		if b.Failure != "" {
			s.fail()
			return
		}
		kinds := DiffKinds(serving, b)
		if len(kinds) == 0 {
			return
		}
		b.GrantRules = locate().Rules
		for _, k := range kinds {
			s.record(Difference{Kind: k, Method: "tools/call", Tool: name, Subject: caller.Subject, Roles: caller.Roles, Serving: serving, Candidate: b}, args, meta)
		}
	})
}

// decideCall is the candidate's Side of one call: its grant decision
// (memoised where the candidate allows, as served) and, when granted and
// withRules, its toolgate.call rules: the same engine calls the served
// pipeline makes at steps 3 to 5. locate evaluates the grant decision
// again with the rules that defined it, for a difference.
func (s *Shadow) decideCall(ctx context.Context, caller *toolcall.Caller, name string, args, meta json.RawMessage, withRules bool) (Side, func() *engine.GrantDecision) {
	cand := s.candidate()
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	req := engine.Request{Method: engine.MethodCall, Tool: name, Arguments: args, Meta: engine.BoundMeta(meta)}
	b := Side{Revision: cand.Hash()}
	d := cand.Grant(ctx, caller, req)
	var err error
	if b.Granted, err = d.Allowed(name); err != nil {
		b.Failure = err.Error()
	}
	if b.Granted && withRules {
		b.setCall(&cand.Call(ctx, caller, req).CallDecision)
	}
	return b, func() *engine.GrantDecision { return cand.Explain(ctx, caller, req) }
}

func (s *Shadow) observeList(_ context.Context, l *hooks.ListRecord) {
	if s.candidate() == nil {
		return
	}
	caller := cloneCaller(l.Caller)
	rev, ok := l.Revision.(*engine.Revision) // the adapter's revisions are the engine's
	if !ok {
		return
	}
	listed := make(map[string]bool, len(l.Listed))
	for _, n := range l.Listed {
		listed[n] = true
	}
	rules := l.Rules
	meta, _ := l.Meta.MarshalJSON()
	s.enqueue(func(ctx context.Context) {
		cand := s.candidate()
		req := engine.Request{Method: engine.MethodList, Meta: engine.BoundMeta(meta)}
		d := cand.Grant(ctx, caller, req)
		if d.Err != nil {
			s.fail()
			return
		}
		var diffs []Difference
		seen := map[string]bool{}
		for _, reg := range []*engine.Revision{rev, cand} {
			for _, t := range reg.Registry().Tools {
				n := t.Name
				if seen[n] {
					continue
				}
				seen[n] = true
				a := Side{Revision: rev.Hash(), Granted: listed[n], GrantRules: rules}
				b := Side{Revision: cand.Hash(), Granted: d.Visible(n)}
				for _, k := range DiffKinds(a, b) {
					diffs = append(diffs, Difference{Kind: k, Method: "tools/list", Tool: n, Subject: caller.Subject, Roles: caller.Roles, Serving: a, Candidate: b})
				}
			}
		}
		if len(diffs) == 0 {
			return
		}
		located := cand.Explain(ctx, caller, req).Rules
		for _, df := range diffs {
			df.Candidate.GrantRules = located
			s.record(df, nil, meta)
		}
	})
}

func (s *Shadow) record(d Difference, args, meta json.RawMessage) {
	s.diffs.WithLabelValues(d.Kind).Inc()
	s.mu.Lock()
	s.counts[d.Kind]++
	s.mu.Unlock()
	path := PathCall
	if d.Method == "tools/list" {
		path = PathList
	}
	s.o.DecisionLog.Log(decisionlog.Decision{
		ID: newID(), Path: path, Revision: d.Serving.Revision, Subject: d.Subject, Roles: d.Roles,
		Method: d.Method, Tool: d.Tool, Arguments: args, Meta: meta,
		Result: map[string]any{"kind": d.Kind, "serving": d.Serving, "candidate": d.Candidate},
	})
	if s.o.OnDifference != nil {
		s.o.OnDifference(d)
	}
}

// Status is what the health page and the console show of the shadow.
type Status struct {
	Candidate string `json:"candidate,omitempty"`
	Error     string `json:"error,omitempty"`
	// Refused is why the last candidate offered since (a new candidate
	// bundle) was refused; the one before it is still compared.
	Refused  string `json:"refused,omitempty"`
	Compared uint64 `json:"compared"`
	Dropped  uint64 `json:"dropped"`
	// Failures are the comparisons whose candidate decision failed (an
	// evaluation error or timeout), counted apart from Differences.
	Failures    uint64            `json:"candidate_failures"`
	Differences map[string]uint64 `json:"differences"`
}

// Status reports the candidate, its compile error, and the counts.
func (s *Shadow) Status() Status {
	st := Status{Compared: s.nDone.Load(), Dropped: s.nDrop.Load(), Failures: s.nFail.Load(), Differences: map[string]uint64{}}
	if c := s.candidate(); c != nil {
		st.Candidate = c.Hash()
	}
	if s.o.Engine != nil {
		st.Refused = s.o.Engine.Status().LastError
	}
	if s.o.Err != nil {
		st.Error = s.o.Err.Error()
	}
	s.mu.Lock()
	for k, v := range s.counts {
		st.Differences[k] = v
	}
	s.mu.Unlock()
	return st
}

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
