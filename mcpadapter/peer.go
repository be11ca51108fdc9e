package mcpadapter

//lint:file-ignore SA1019 logging, sampling and roots are deprecated from protocol revision 2026-07-28 on; earlier revisions have them, and toolgate keeps what the server behind it does

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/internal/backend"
	"github.com/toolgate/toolgate/toolcall"
)

// Peer is the client of the tools/call being served, as the method that
// runs it sees it (docs/contract.md §16, docs/relay.md), through the Peer
// of its call's context (PeerOf). A Peer is valid while its call runs;
// it is safe for concurrent use.
type Peer = backend.Peer

var _ Peer = (*peer)(nil)

// peer is the adapter's Peer: the call's request and session.
type peer struct {
	a      *Adapter
	req    *mcp.CallToolRequest
	ss     *mcp.ServerSession
	caller *toolcall.Caller
	// call is the call's context for the result rules (nil: none apply).
	call *hooks.CallContext
	// bc is the call bridged for a 2026-07-28 client (bridge.go): what
	// the Peer asks goes in input-required results. nil: not bridged.
	bc *bridgedCall
	// opened is the upstream's requestState the client brought back,
	// opened (bridge.go); "" when none.
	opened string
}

// peerContext is a call's context carrying its Peer: the Peer and the
// context in one allocation, where context.WithValue would take two.
// Everything but the Peer's key is its parent's (Done and Err too, so the
// context package propagates cancellation through it as through a
// context.WithValue).
type peerContext struct {
	context.Context
	peer peer
}

func (c *peerContext) Value(key any) any {
	if _, ok := key.(backend.PeerKey); ok {
		return &c.peer
	}
	return c.Context.Value(key)
}

// PeerOf returns the Peer of the call ctx runs, nil outside a served call
// (a dry run, a call made without a session).
func PeerOf(ctx context.Context) Peer { return backend.PeerOf(ctx) }

// withPeer attaches the call's Peer to ctx: one allocation per call
// (never per message).
// call, when not nil, is the call's context: what the Peer sends passes
// the result rules of its revision.
func (a *Adapter) withPeer(ctx context.Context, req *mcp.CallToolRequest, caller *toolcall.Caller, call *hooks.CallContext) context.Context {
	if req == nil || req.Session == nil {
		return ctx
	}
	opened, _ := ctx.Value(openedStateKey{}).(string)
	return &peerContext{Context: ctx, peer: peer{a: a, req: req, ss: req.Session, caller: caller, call: call, bc: bridgedOf(ctx), opened: opened}}
}

// ErrNoPeer is returned by a Peer's requests when the calling client
// cannot be asked: it did not declare the capability.
var ErrNoPeer = backend.ErrNoPeer

// Caller is the caller of the call, as the policy saw it.
func (p *peer) Caller() *toolcall.Caller { return p.caller }

// Owner is the key of the caller's identity, the identity source and the
// subject ("token:alice", "jwt:alice"), as HTTP sessions are bound to it;
// for a caller without one (stdio, a CallerFunc of the library) it is
// "caller:" and the subject. Upstream sessions are keyed by it.
func (p *peer) Owner() string { return ownerOf(p.req, p.caller) }

// ProtocolVersion is the protocol revision of the calling client's session.
func (p *peer) ProtocolVersion() string {
	if ip := p.ss.InitializeParams(); ip != nil {
		return ip.ProtocolVersion
	}
	return ""
}

// Capabilities are the capabilities the calling client declared; nil when
// it declared none.
func (p *peer) Capabilities() *mcp.ClientCapabilities {
	if caps := requestCapabilities(p.req); caps != nil { // the SDK's decode, kept (capabilities.go)
		return caps
	}
	if ip := p.ss.InitializeParams(); ip != nil {
		return ip.Capabilities
	}
	return nil
}

// ProgressToken is the progressToken the client sent with the call; nil
// when it asked for no progress.
func (p *peer) ProgressToken() any {
	if p.req.Params == nil {
		return nil
	}
	return p.req.Params.GetProgressToken()
}

// InputResponses and RequestState are what a client of the 2026-07-28
// revision sent back after an input-required result (SEP-2322).
func (p *peer) InputResponses() mcp.InputResponseMap {
	if p.req.Params == nil {
		return nil
	}
	return p.req.Params.InputResponses
}

// RequestState: see InputResponses.
func (p *peer) RequestState() string {
	if p.req.Params == nil {
		return ""
	}
	return p.req.Params.RequestState
}

// RelayedRequestState is the requestState of an upstream that the client
// brought back: the one SealRequestState sealed for this caller, tool and
// arguments, opened; "" when the client brought none of those (a state
// that is not toolgate's is not handed on).
func (p *peer) RelayedRequestState() string { return p.opened }

// SealRequestState seals an upstream's requestState for the client of
// this call: bound to the caller, the tool and its arguments, for
// SealedStateTTL, and integrity-protected; the retry that brings it back
// has it opened (RelayedRequestState), and one altered or another
// caller's is refused with a JSON-RPC error.
func (p *peer) SealRequestState(state string) string {
	if state == "" {
		return ""
	}
	exp := time.Now().Add(SealedStateTTL)
	return p.a.bridges.seal(bindingOf(p.req, p.Owner()), openedState{kind: stateSealed, inner: state}, exp)
}

// MultiRoundTrip reports whether the calling client takes input-required
// results (2026-07-28) rather than requests of its own.
func (p *peer) MultiRoundTrip() bool { return requestRevision(p.req) >= multiRoundTripRevision }

// LogLevel is the level the client asked for: on the 2026-07-28
// revision, which has no logging/setLevel, the one in the call's _meta;
// otherwise the one it set with logging/setLevel on its session. ok is
// false when it asked for none.
func (p *peer) LogLevel() (level mcp.LoggingLevel, ok bool) {
	if p.req.Params != nil {
		meta := p.req.Params.GetMeta()
		if v, _ := meta[mcp.MetaKeyProtocolVersion].(string); v >= multiRoundTripRevision || p.ProtocolVersion() >= multiRoundTripRevision {
			if lv, isString := meta[mcp.MetaKeyLogLevel].(string); isString && knownLevel(lv) {
				return mcp.LoggingLevel(lv), true
			}
		}
	}
	return p.a.levels.get(p.ss)
}

// knownLevel reports whether lv is one of MCP's log levels.
func knownLevel(lv string) bool {
	switch lv {
	case "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency":
		return true
	}
	return false
}

// Progress sends the client a notifications/progress for the call, when
// it asked for progress (sent a progressToken); it does nothing otherwise.
// total 0 is unknown.
func (p *peer) Progress(ctx context.Context, progress, total float64, message string) error {
	tok := p.ProgressToken()
	if tok == nil {
		return nil
	}
	return p.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: progress, Total: total, Message: message})
}

// NotifyProgress sends a notifications/progress as is (the relay's; a Go
// method calls Progress). Its token must be the call's.
func (p *peer) NotifyProgress(ctx context.Context, params *mcp.ProgressNotificationParams) error {
	params, ok := governRelayed(ctx, p, methodProgress, params)
	if !ok {
		return errWithheldMessage
	}
	return p.ss.NotifyProgress(ctx, params)
}

// Log sends the client a notifications/message: data at level, from
// logger (may be ""). A client that set a level with logging/setLevel
// gets the messages at that level or above; one that set none gets every
// message (docs/contract.md §16).
func (p *peer) Log(ctx context.Context, level mcp.LoggingLevel, logger string, data any) error {
	return p.LogMessage(ctx, &mcp.LoggingMessageParams{Level: level, Logger: logger, Data: data})
}

// LogMessage is Log with the notification's params as they are (the
// relay's).
func (p *peer) LogMessage(ctx context.Context, params *mcp.LoggingMessageParams) error {
	params, ok := governRelayed(ctx, p, methodLogMessage, params)
	if !ok {
		return errWithheldMessage
	}
	if _, set := p.a.levels.get(p.ss); set || p.ProtocolVersion() >= multiRoundTripRevision {
		// The SDK filters by the level set (or, on 2026-07-28, by the
		// request's _meta level).
		return p.ss.Log(ctx, params)
	}
	// The SDK sends nothing to a session that set no level; the contract
	// says such a client gets everything. The message goes out through
	// the sending path of a progress notification, which the adapter's
	// sending middleware (sendUnfilteredLog) turns into this message.
	return p.ss.NotifyProgress(context.WithValue(ctx, unfilteredLogKey{}, params), &mcp.ProgressNotificationParams{})
}

// CreateMessage asks the client to sample (sampling/createMessage), and
// waits for its answer. A client that did not declare sampling is not
// asked: ErrNoPeer.
func (p *peer) CreateMessage(ctx context.Context, params *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error) {
	if caps := p.Capabilities(); caps == nil || caps.Sampling == nil {
		return nil, ErrNoPeer
	}
	params, ok := governRelayed(ctx, p, "sampling/createMessage", params)
	if !ok {
		return nil, errWithheld
	}
	if p.bc != nil {
		return askBridged[*mcp.CreateMessageWithToolsResult](ctx, p.bc, "sampling", params)
	}
	return p.ss.CreateMessageWithTools(ctx, params)
}

// Elicit asks the client's user for input (elicitation/create), and waits
// for the answer. A client that did not declare elicitation is not asked:
// ErrNoPeer.
func (p *peer) Elicit(ctx context.Context, params *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	if caps := p.Capabilities(); caps == nil || caps.Elicitation == nil {
		return nil, ErrNoPeer
	}
	params, ok := governRelayed(ctx, p, "elicitation/create", params)
	if !ok {
		return nil, errWithheld
	}
	if p.bc != nil {
		return askBridged[*mcp.ElicitResult](ctx, p.bc, "elicitation", params)
	}
	return p.ss.Elicit(ctx, params)
}

// ListRoots asks the client for its roots (roots/list). A client that did
// not declare roots is not asked: ErrNoPeer.
func (p *peer) ListRoots(ctx context.Context) (*mcp.ListRootsResult, error) {
	if caps := p.Capabilities(); caps == nil || caps.RootsV2 == nil {
		return nil, ErrNoPeer
	}
	if p.bc != nil {
		return askBridged[*mcp.ListRootsResult](ctx, p.bc, "roots", &mcp.ListRootsParams{})
	}
	return p.ss.ListRoots(ctx, &mcp.ListRootsParams{})
}

// askBridged asks the client of a bridged call, in an input-required
// result, and waits for its answer of type T.
func askBridged[T mcp.InputResponse](ctx context.Context, bc *bridgedCall, prefix string, req mcp.InputRequest) (T, error) {
	var zero T
	res, err := bc.ask(ctx, prefix, req)
	if err != nil {
		return zero, err
	}
	t, ok := res.(T)
	if !ok {
		return zero, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("the client answered %s with a result of another kind", prefix)}
	}
	return t, nil
}

type unfilteredLogKey struct{}

// sendUnfilteredLog is the sending middleware behind LogMessage for a
// client that set no level: a progress notification carrying a log
// message in its context is sent as that notifications/message.
func sendUnfilteredLog(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == methodProgress {
			if params, ok := ctx.Value(unfilteredLogKey{}).(*mcp.LoggingMessageParams); ok {
				ss, _ := req.GetSession().(*mcp.ServerSession)
				return next(ctx, methodLogMessage, &mcp.ServerRequest[*mcp.LoggingMessageParams]{Session: ss, Params: params})
			}
		}
		return next(ctx, method, req)
	}
}

const (
	methodProgress   = "notifications/progress"
	methodLogMessage = "notifications/message"
	methodSetLevel   = "logging/setLevel"
)

// logLevels remembers the level each session set with logging/setLevel
// (the SDK keeps it, unexported). A session is forgotten when it ends.
type logLevels struct {
	mu     sync.Mutex
	levels map[*mcp.ServerSession]mcp.LoggingLevel
}

func (l *logLevels) get(ss *mcp.ServerSession) (mcp.LoggingLevel, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	lv, ok := l.levels[ss]
	return lv, ok
}

// set records ss's level; the first time, one goroutine waits for the
// session's end to forget it (one per session that sets a level).
func (l *logLevels) set(ss *mcp.ServerSession, level mcp.LoggingLevel, log *slog.Logger) {
	if ss == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.levels[ss]; ok {
		l.levels[ss] = level
		return
	}
	if len(l.levels) >= maxListingSessions {
		log.Warn("toolgate: too many sessions set a log level; this one is not remembered", slog.Int("max", maxListingSessions))
		return
	}
	if l.levels == nil {
		l.levels = map[*mcp.ServerSession]mcp.LoggingLevel{}
	}
	l.levels[ss] = level
	go func() {
		_ = ss.Wait()
		l.mu.Lock()
		defer l.mu.Unlock()
		delete(l.levels, ss)
	}()
}
