package mcpadapter

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/internal/jsonx"
	"github.com/toolgate/toolgate/internal/wire"
	"github.com/toolgate/toolgate/methods"
	"github.com/toolgate/toolgate/toolcall"
)

// Revisions is where the adapter reads the revision a decision uses; an
// *engine.Engine is one.
type Revisions interface {
	Current() *engine.Revision
}

// CallerFunc is the one hand-off of a request's caller from its
// transport to the adapter: on whose behalf the request is made (nil:
// nobody) and the identity source that vouched for that caller
// (CallContext.Source: SourceLocal for one the operator names; over HTTP
// the source of the bearer token). The adapter may keep the caller.
type CallerFunc func(ctx context.Context, req mcp.Request) (caller *toolcall.Caller, source string)

// StaticCaller is a CallerFunc that always answers c, from SourceLocal
// (for stdio).
func StaticCaller(c *toolcall.Caller) CallerFunc {
	return func(context.Context, mcp.Request) (*toolcall.Caller, string) { return c, hooks.SourceLocal }
}

// DefaultHookTimeout bounds one hook run; a hook still running past it has
// failed (a before hook then fails the call closed).
const DefaultHookTimeout = 10 * time.Second

// Options configure an Adapter.
type Options struct {
	// Revisions supplies the registry and policies (required).
	Revisions Revisions
	// Methods resolves rows' methods (required).
	Methods methods.Set
	// Caller identifies the caller of each request and its identity
	// source; nil: everyone is nobody (from SourceLocal).
	Caller CallerFunc
	// Logger receives failures in full detail; nil discards them.
	Logger *slog.Logger
	// HookTimeout bounds each hook; zero is DefaultHookTimeout.
	HookTimeout time.Duration
	// ListFallback is what tools/list shows when the grant policy fails
	// (docs/contract.md §6); the zero value is ListFallbackBase.
	ListFallback hooks.ListFallback
	// Approvals holds the calls an approval rule names (docs/contract.md §13); nil: a
	// call an approval rule names fails closed (internal error).
	Approvals Approvals
	// Catalog serves the prompts, resources and completions of importing
	// upstreams (docs/contract.md §16; catalog.go); nil: none.
	Catalog Catalog
	// Limits counts calls under the rate limits of data.toolgate.call.limit
	// (docs/contract.md §18); nil: a call a limit rule names fails closed
	// (internal error).
	Limits hooks.Limits
	// History keeps callers' histories for input.history
	// (docs/contract.md §20); nil: a call whose policy reads it fails
	// closed, and no call is recorded.
	History hooks.History
	// Logging makes NewServer announce the logging capability
	// (docs/contract.md §16): set it when a method may log to its client
	// (a Go method through its Peer, an upstream that offers logging).
	Logging bool
	// InputWait bounds how long a call bridged for a 2026-07-28 client
	// waits for its retry after an input-required result (bridge.go);
	// zero is DefaultInputWait.
	InputWait time.Duration
}

// Adapter governs an MCP server's tools/list and tools/call with a toolgate
// engine (docs/contract.md §5, §6). Configure it (AddHook) before serving; it is then
// safe for concurrent use.
type Adapter struct {
	opts      Options
	log       *slog.Logger
	hooks     []hooks.Hook
	observers []hooks.Observer
	cache     atomic.Pointer[revisionCache]
	cacheMu   sync.Mutex // held while building a revision's cache (cacheOf)
	// sessions remembers each session's listing caller, for telling
	// exactly the sessions whose listing a reload changed.
	sessions listingSessions

	notifyMu  sync.Mutex
	notifySeq uint64

	// confirmKey signs the requestState of the confirmations the adapter
	// asks (confirmState), so that only answers it asked for count.
	confirmKey [32]byte
	catalog    catalogSessions // subscribers' callers (catalog.go)
	// levels are the levels sessions set with logging/setLevel (Peer.Log).
	levels logLevels
	// bridges are the bridged calls waiting for their client's retry.
	bridges bridges
}

// New returns an Adapter. It panics when Revisions or Methods is nil.
func New(opts Options) *Adapter {
	if opts.Revisions == nil || opts.Methods == nil {
		panic("mcpadapter: Options.Revisions and Options.Methods are required")
	}
	if opts.Caller == nil {
		opts.Caller = StaticCaller(nil)
	}
	if opts.HookTimeout <= 0 {
		opts.HookTimeout = DefaultHookTimeout
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	a := &Adapter{opts: opts, log: log}
	_, _ = rand.Read(a.confirmKey[:])
	a.bridges.init()
	return a
}

// AddHook registers a hook. Before halves run in registration order, then
// the toolgate.call rules; after halves run in registration order.
func (a *Adapter) AddHook(h hooks.Hook) { a.hooks = append(a.hooks, h) }

// NewServer returns an MCP server governed by the adapter. Serve it over a
// transport from WrapTransport, or over HTTP behind WrapHTTP.
func (a *Adapter) NewServer(impl *mcp.Implementation, opts *mcp.ServerOptions) *mcp.Server {
	s, _ := a.NewServerWith(impl, opts, Layers{})
	return s
}

// Layer is one receiving middleware of a governed MCP server, with the
// name it is known by.
type Layer struct {
	Name       string
	Middleware mcp.Middleware
}

// Layers are a host's receiving middleware around the adapter's, each
// outermost first (NewServerWith).
type Layers struct {
	// Transport are the transport's own (over HTTP: the sessions'
	// accounting, the shutdown, the end of a listen stream, the access
	// token): they see the request as the SDK decoded it.
	Transport []Layer
	// Inner are the host's (tracing, its own middleware): they see the
	// request as the adapter does, and read what the wire layer carried
	// with its helpers (tracing.WireMeta).
	Inner []Layer
}

// The names of the adapter's layers.
const (
	// LayerWire reads what the wire layer (WrapTransport, WrapHTTP)
	// carried past the SDK's decoding and hands it on, typed, to every
	// layer inside it.
	LayerWire = "wire"
	// LayerCatalog decides prompts, resources and completions (only with
	// Options.Catalog).
	LayerCatalog = "catalog"
	// LayerGovernance answers tools/list and tools/call.
	LayerGovernance = "governance"
)

// NewServerWith is NewServer with the host's layers around the adapter's.
// It adds every receiving middleware of the server in one list, the one
// order of a governed server, outermost first:
//
//	host.Transport...   the transport's own
//	LayerWire           what the wire layer carried, handed on typed
//	host.Inner...       the host's: tracing, its own middleware
//	LayerCatalog        prompts, resources, completions (Options.Catalog)
//	LayerGovernance     tools/list and tools/call
//
// and returns the server with the names of that list.
func (a *Adapter) NewServerWith(impl *mcp.Implementation, opts *mcp.ServerOptions, host Layers) (*mcp.Server, []string) {
	s := a.newServer(impl, opts)
	governance := a.governance(s) // its sending middleware go inside the catalog's
	var list []Layer
	list = append(list, host.Transport...)
	list = append(list, Layer{LayerWire, wire.Middleware})
	list = append(list, host.Inner...)
	if catalog := a.installCatalog(s); catalog != nil {
		list = append(list, Layer{LayerCatalog, catalog})
	}
	list = append(list, Layer{LayerGovernance, governance})
	names := make([]string, len(list))
	ms := make([]mcp.Middleware, len(list))
	for i, l := range list {
		names[i], ms[i] = l.Name, l.Middleware
	}
	s.AddReceivingMiddleware(ms...)
	return s, names
}

// newServer is the MCP server the adapter governs, before its middleware:
// the capabilities the adapter serves are announced.
func (a *Adapter) newServer(impl *mcp.Implementation, opts *mcp.ServerOptions) *mcp.Server {
	var o mcp.ServerOptions
	if opts != nil {
		o = *opts
	}
	if o.Capabilities == nil {
		o.Capabilities = &mcp.ServerCapabilities{}
	}
	if o.Capabilities.Tools == nil {
		o.Capabilities.Tools = &mcp.ToolCapabilities{ListChanged: true}
	}
	a.catalogServerOptions(&o)
	//lint:ignore SA1019 earlier protocol revisions have logging (deprecated from 2026-07-28 on)
	if a.opts.Logging && o.Capabilities.Logging == nil {
		//lint:ignore SA1019 as above
		o.Capabilities.Logging = &mcp.LoggingCapabilities{}
	}
	return mcp.NewServer(impl, &o)
}

// governance is the middleware that answers tools/list and tools/call; it
// also installs on s the adapter's sending middleware, and remembers each
// session's listing caller (that of its last tools/list, or of its
// subscriptions/listen stream), so that notifications/tools/list_changed
// reaches only the sessions NotifyListingChanged names.
func (a *Adapter) governance(s *mcp.Server) mcp.Middleware {
	s.AddSendingMiddleware(a.filterListChanged, sendUnfilteredLog)
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			switch r := req.(type) {
			case *mcp.CallToolRequest:
				if requestRevision(r) >= multiRoundTripRevision {
					if res, err, ok := a.multiRound(ctx, r); ok {
						return res, err
					}
				}
				return a.serveCall(ctx, r)
			case *mcp.ListToolsRequest:
				return a.listSafely(ctx, r), nil
			}
			switch method {
			case methodSubscriptionsListen:
				ss, _ := req.GetSession().(*mcp.ServerSession)
				caller, _ := a.opts.Caller(ctx, req)
				a.sessions.listed(ss, caller, a.log)
			case methodSetLevel:
				res, err := next(ctx, method, req)
				//lint:ignore SA1019 earlier protocol revisions have logging/setLevel
				params, _ := req.GetParams().(*mcp.SetLoggingLevelParams)
				if ss, _ := req.GetSession().(*mcp.ServerSession); err == nil && params != nil {
					a.levels.set(ss, params.Level, a.log)
				}
				return res, err
			}
			return next(ctx, method, req)
		}
	}
}

const methodSubscriptionsListen = "subscriptions/listen"

// callSafely is Call, with a last line of defence: the SDK does not recover
// a handler's panic, so one would end the whole server. Hooks and methods
// are already guarded; anything else that panics answers the generic
// internal error and is logged.
func (a *Adapter) callSafely(ctx context.Context, req *mcp.CallToolRequest) (res *mcp.CallToolResult) {
	defer func() {
		if v := recover(); v != nil {
			a.log.Error("tools/call panicked; answered with the internal error", slog.Any("error", &PanicError{Value: v, Stack: debug.Stack()}))
			res = TextResult(AnswerInternal, true)
		}
	}()
	return a.Call(ctx, req)
}

// listSafely is List with the same defence: a panic lists nothing.
func (a *Adapter) listSafely(ctx context.Context, req *mcp.ListToolsRequest) (res mcp.Result) {
	defer func() {
		if v := recover(); v != nil {
			a.log.Error("tools/list panicked; answered with an empty listing", slog.Any("error", &PanicError{Value: v, Stack: debug.Stack()}))
			empty := &mcp.ListToolsResult{Tools: []*mcp.Tool{}}
			empty.CacheScope = "private"
			res = empty
		}
	}()
	list, wire := a.list(ctx, req, false)
	return &wireList{ListToolsResult: list, tools: wire}
}

// revision returns the current revision with its derived cache.
func (a *Adapter) revision() *revisionCache { return a.cacheOf(a.opts.Revisions.Current()) }

// List answers tools/list: the rows the caller's grant decision allows,
// read leniently (a failing policy falls back to the base decision, or to
// nothing with ListFallbackNone).
func (a *Adapter) List(ctx context.Context, req *mcp.ListToolsRequest) *mcp.ListToolsResult {
	res, _ := a.list(ctx, req, true)
	return res
}

// list is List, or (descriptors false) the listed tools as sent on the
// wire: the served path sends those and does not build the SDK's
// descriptors; List does not render the wire ones.
func (a *Adapter) list(ctx context.Context, req *mcp.ListToolsRequest, descriptors bool) (*mcp.ListToolsResult, []json.RawMessage) {
	start := time.Now()
	res := &mcp.ListToolsResult{Tools: []*mcp.Tool{}}
	res.CacheScope = "private"
	rawMeta := wire.InfoOf(ctx, req).Meta
	caller, _ := a.opts.Caller(ctx, req)
	a.sessions.listed(req.Session, caller, a.log)
	if caller == nil {
		return res, nil
	}
	rc := a.revision()
	ereq := engine.Request{Method: engine.MethodList, Meta: engine.BoundMeta(json.RawMessage(rawMeta))}
	d := rc.rev.Grant(ctx, caller, ereq)
	if d.Outcome == engine.Failed {
		fallback := "listing the base decision"
		if a.opts.ListFallback == hooks.ListFallbackNone {
			fallback = "listing nothing (--list-fallback none)"
		}
		a.log.Error("tools/list: grant decision failed; "+fallback,
			slog.String("subject", caller.Subject), slog.String("revision", rc.rev.String()), slog.Any("error", d.Err))
	}
	// The rows are computed once per decision, and a cached decision is
	// shared by every listing of its caller: only the descriptors are copied.
	rows := a.visibleRows(d)
	var wire []json.RawMessage
	if descriptors {
		tools := rc.descriptors()
		res.Tools = make([]*mcp.Tool, len(rows))
		for k, i := range rows {
			res.Tools[k] = tools[i]
		}
	} else {
		all := rc.wires()
		wire = make([]json.RawMessage, len(rows))
		for k, i := range rows {
			wire[k] = all[i]
		}
	}
	if len(a.observers) > 0 {
		a.observeList(ctx, &hooks.ListRecord{Caller: caller, Revision: rc.rev, Meta: ereq.Meta, Outcome: d.Outcome, Rules: d.Rules, Start: start}, rc, rows)
	}
	return res, wire
}

// visibleRows is the lenient reading of d that tools/list shows (docs/contract.md
// §6): a failed decision lists the base decision, or nothing with
// ListFallbackNone.
func (a *Adapter) visibleRows(d *engine.GrantDecision) []int {
	if d.Outcome == engine.Failed && a.opts.ListFallback == hooks.ListFallbackNone {
		return nil
	}
	return d.VisibleRows()
}

// wireList is a tools/list result as the middleware returns it: the SDK's
// result (its _meta, cache hints and result type are set as usual) with the
// tools sent as pre-rendered descriptors, so the registry's annotations
// pass through exactly.
type wireList struct {
	*mcp.ListToolsResult
	tools []json.RawMessage
}

func (l *wireList) MarshalJSON() ([]byte, error) {
	head := *l.ListToolsResult
	head.Tools = []*mcp.Tool{}
	b, err := json.Marshal(&head)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	buf.WriteByte('[')
	for i, t := range l.tools {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(t)
	}
	buf.WriteByte(']')
	m["tools"] = buf.Bytes()
	return jsonx.Marshal(m)
}

// runAfter runs every after hook once; failures are logged and ignored.
// The prompt ones share one context without the request's cancellation.
func (a *Adapter) runAfter(ctx context.Context, call *hooks.CallContext, rec *hooks.Record) {
	var detached context.Context
	for i := range a.hooks {
		h := &a.hooks[i]
		if h.After == nil {
			continue
		}
		var err error
		if prompt(h, call) {
			if detached == nil {
				detached = context.WithoutCancel(ctx)
			}
			err = safely(func() error { return h.After(detached, call, rec) })
		} else {
			err = a.guardAfter(ctx, h, call, rec)
		}
		if err != nil {
			a.log.Error("after hook failed; ignored",
				slog.String("hook", h.Name), slog.String("decision_id", call.DecisionID), slog.Any("error", err))
		}
	}
}

// The halves of a hook that is not prompt run under guard; their own
// functions, so that what guard's closure captures is allocated only for
// them.

func (a *Adapter) guardAfter(ctx context.Context, h *hooks.Hook, call *hooks.CallContext, rec *hooks.Record) error {
	_, err := guard(ctx, a.opts.HookTimeout, true, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, h.After(ctx, call, rec)
	})
	return err
}

// runBefore runs h's before half: a prompt one on the call's goroutine,
// with only the panic turned into an error.
func (a *Adapter) runBefore(ctx context.Context, h *hooks.Hook, call *hooks.CallContext) (hooks.Verdict, error) {
	if !prompt(h, call) {
		return a.guardBefore(ctx, h, call)
	}
	var v hooks.Verdict
	err := safely(func() error {
		var err error
		v, err = h.Before(ctx, call)
		return err
	})
	return v, err
}

func (a *Adapter) guardBefore(ctx context.Context, h *hooks.Hook, call *hooks.CallContext) (hooks.Verdict, error) {
	return guard(ctx, a.opts.HookTimeout, false, func(ctx context.Context) (hooks.Verdict, error) {
		return h.Before(ctx, call)
	})
}

// guarded is what a hook run under guard returns.
type guarded[T any] struct {
	v   T
	err error
}

// guard runs f with the deadline timeout, turning a panic into an error. A
// hook that outlives its deadline is abandoned (its goroutine finishes on
// its own) and counts as failed. With detach, f does not see the request's
// cancellation (after hooks run also for a caller that went away).
//
// What f returns travels only through the buffered channel: an abandoned
// goroutine writes nothing that the caller reads after the deadline.
func guard[T any](ctx context.Context, timeout time.Duration, detach bool, f func(context.Context) (T, error)) (T, error) {
	if detach {
		ctx = context.WithoutCancel(ctx)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	done := make(chan guarded[T], 1)
	go func() {
		var r guarded[T]
		r.err = safely(func() error {
			var err error
			r.v, err = f(ctx)
			return err
		})
		done <- r
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, fmt.Errorf("hook did not return within %s: %w", timeout, ctx.Err())
	}
}

// PanicError is a panic recovered from a hook or method.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v\n%s", e.Value, e.Stack) }

func safely(f func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return f()
}

// newDecisionID is 16 random bytes in hex: one allocation, the string.
func newDecisionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	var h [32]byte
	hex.Encode(h[:], b[:])
	return string(h[:])
}
