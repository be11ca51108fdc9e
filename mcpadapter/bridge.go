package mcpadapter

//lint:file-ignore SA1019 sampling and roots are deprecated from protocol revision 2026-07-28 on; earlier revisions have them, and toolgate bridges them

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/canon"
	"github.com/toolgate/toolgate/toolcall"
)

// Revisions bridged (docs/relay.md, docs/contract.md §19).
//
// A client of the 2026-07-28 revision gets no server-to-client request:
// a server that needs its input answers the call with an input-required
// result (inputRequests, requestState), and the client calls again with
// its inputResponses and that requestState. A method that asks its
// client during the call (a Go method through its Peer, an upstream of an
// older revision whose sampling, elicitation or roots request the relay
// hands to the Peer) is bridged: the call runs on its own goroutine, and
// the request that serves it waits for whichever comes first, the call's
// result or a question the method asks. A question answers the request
// with an input-required result carrying it; the method keeps waiting,
// its call open, for the retry that brings the answer (at most
// DefaultInputWait, Options.InputWait). The call is governed once: the
// grant decision, hooks, the ledger and the audit trail see one call, its
// last result, however many rounds it took.
//
// The requestState of a bridged round names the waiting call and the
// round. It is bound to the caller (its identity key), the tool and its
// arguments, expires with the wait, and is MACed under a key of the
// process: a state altered, replayed (a round answered already), another
// caller's, or one whose wait ended, is refused with the JSON-RPC error
// errInvalidState, as the conformance suite's negative scenarios expect.
// The requestState an upstream of 2026-07-28 answers is sealed the same
// way (bound to the caller, the tool and its arguments, for
// SealedStateTTL) before it reaches the client, and opened before it
// goes back upstream: what the upstream gets back is what it gave, for
// the call it gave it for.

// DefaultInputWait is how long a bridged call waits for the client's retry
// after an input-required result: past it, the call is cancelled (an
// upstream call with it) and its requestState is refused.
const DefaultInputWait = 5 * time.Minute

// SealedStateTTL is how long the requestState of a 2026-07-28 upstream,
// sealed for its client, may come back: nothing waits for it (the
// upstream keeps its state in it), and a person may take long to answer.
const SealedStateTTL = time.Hour

// statePrefix starts every requestState toolgate seals: one without it is
// not toolgate's.
const statePrefix = "tg1."

// The kinds of state.
const (
	stateRound  byte = 'r' // a round of a bridged call
	stateSealed byte = 's' // the requestState of a 2026-07-28 upstream
)

// errInvalidState answers a requestState that does not open: one JSON-RPC
// error for every reason (the reason is logged), as the SDKs answer.
var errInvalidState = &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Invalid requestState."}

// stateBinding is what a requestState is bound to.
type stateBinding struct {
	owner, tool, args string
}

func bindingOf(req *mcp.CallToolRequest, owner string) stateBinding {
	b := stateBinding{owner: owner}
	if req.Params != nil {
		b.tool = req.Params.Name
		b.args = canon.SHA256(normaliseArguments(req.Params.Arguments))
	}
	return b
}

// openedState is a requestState opened.
type openedState struct {
	kind  byte
	id    uint64 // stateRound: the call
	round uint64 // stateRound: the round it answers
	inner string // stateSealed: the upstream's own state
}

// bridges are an adapter's bridged calls waiting for a retry.
type bridges struct {
	key   [32]byte
	mu    sync.Mutex
	calls map[uint64]*bridgedCall
	seq   uint64
}

func (b *bridges) init() { _, _ = rand.Read(b.key[:]) }

// seal encodes a state of kind for bind, valid until expires.
func (b *bridges) seal(bind stateBinding, st openedState, expires time.Time) string {
	body := make([]byte, 0, 25+len(st.inner)+sha256.Size)
	body = append(body, st.kind)
	body = binary.BigEndian.AppendUint64(body, uint64(expires.Unix()))
	body = binary.BigEndian.AppendUint64(body, st.id)
	body = binary.BigEndian.AppendUint64(body, st.round)
	body = append(body, st.inner...)
	body = append(body, b.mac(bind, body)...)
	return statePrefix + base64.RawURLEncoding.EncodeToString(body)
}

// open decodes state for bind; it fails on anything but a state seal gave
// for bind that has not expired.
func (b *bridges) open(bind stateBinding, state string) (openedState, error) {
	enc, ok := strings.CutPrefix(state, statePrefix)
	if !ok {
		return openedState{}, errors.New("not toolgate's")
	}
	body, err := base64.RawURLEncoding.Strict().DecodeString(enc)
	if err != nil || len(body) < 25+sha256.Size {
		return openedState{}, errors.New("malformed")
	}
	payload, sum := body[:len(body)-sha256.Size], body[len(body)-sha256.Size:]
	if !hmac.Equal(sum, b.mac(bind, payload)) {
		return openedState{}, errors.New("altered, or another caller's or call's")
	}
	if time.Now().Unix() > int64(binary.BigEndian.Uint64(payload[1:9])) {
		return openedState{}, errors.New("expired")
	}
	return openedState{
		kind:  payload[0],
		id:    binary.BigEndian.Uint64(payload[9:17]),
		round: binary.BigEndian.Uint64(payload[17:25]),
		inner: string(payload[25:]),
	}, nil
}

func (b *bridges) mac(bind stateBinding, payload []byte) []byte {
	m := hmac.New(sha256.New, b.key[:])
	// Length-prefixed fields: no two bindings write the same bytes.
	for _, f := range []string{"toolgate.requestState", bind.owner, bind.tool, bind.args} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(f)))
		m.Write(n[:])
		m.Write([]byte(f))
	}
	m.Write(payload)
	return m.Sum(nil)
}

// bridgedCall is a call of a 2026-07-28 client whose method may ask it
// for input.
type bridgedCall struct {
	b    *bridges
	id   uint64
	bind stateBinding
	wait time.Duration
	log  *slog.Logger
	// ctx is the call's (its sent slot too); cancel ends it.
	ctx    context.Context
	cancel context.CancelCauseFunc
	// event is signalled when an ask comes or the call ends.
	event chan struct{}

	mu sync.Mutex
	// round counts the input-required results answered; the retry of
	// the last one carries it.
	round uint64
	// attached: a request of the client waits for the call (the first,
	// or a retry); stop detaches its cancellation.
	attached bool
	stop     func() bool
	timer    *time.Timer
	asks     map[string]*inputAsk
	keys     uint64
	finished bool
	res      *mcp.CallToolResult
}

// inputAsk is one question of the method, waiting for its answer.
type inputAsk struct {
	req    mcp.InputRequest
	answer chan mcp.InputResponse
}

type bridgedKey struct{}

// bridgedOf is the bridged call ctx runs, nil when none.
func bridgedOf(ctx context.Context) *bridgedCall {
	bc, _ := ctx.Value(bridgedKey{}).(*bridgedCall)
	return bc
}

// errCallEnded answers a question asked after the call ended.
var errCallEnded = errors.New("mcpadapter: the call ended")

// ask hands the client a question of the method, in the input-required
// result of the round in progress or the next, and waits for its answer.
func (bc *bridgedCall) ask(ctx context.Context, prefix string, req mcp.InputRequest) (mcp.InputResponse, error) {
	q := &inputAsk{req: req, answer: make(chan mcp.InputResponse, 1)}
	bc.mu.Lock()
	if bc.finished {
		bc.mu.Unlock()
		return nil, errCallEnded
	}
	bc.keys++
	key := fmt.Sprintf("%s-%d", prefix, bc.keys)
	if bc.asks == nil {
		bc.asks = map[string]*inputAsk{}
	}
	bc.asks[key] = q
	bc.mu.Unlock()
	bc.signal()
	select {
	case res := <-q.answer:
		return res, nil
	case <-ctx.Done():
		bc.mu.Lock()
		delete(bc.asks, key)
		bc.mu.Unlock()
		return nil, context.Cause(ctx)
	}
}

func (bc *bridgedCall) signal() {
	select {
	case bc.event <- struct{}{}:
	default:
	}
}

// finish records the call's result.
func (bc *bridgedCall) finish(res *mcp.CallToolResult) {
	bc.mu.Lock()
	bc.finished, bc.res = true, res
	bc.mu.Unlock()
	bc.signal()
}

// attachLocked makes the request of ctx the one waiting for the call: it
// cancelling cancels the call. bc.mu is held.
func (bc *bridgedCall) attachLocked(ctx context.Context) {
	bc.attached = true
	if bc.timer != nil {
		bc.timer.Stop()
		bc.timer = nil
	}
	bc.stop = context.AfterFunc(ctx, func() { bc.cancel(context.Cause(ctx)) })
}

// detachLocked: no request waits for the call any more. bc.mu is held.
func (bc *bridgedCall) detachLocked() {
	bc.attached = false
	if bc.stop != nil {
		bc.stop()
		bc.stop = nil
	}
}

// errInputWait ends a call whose client did not come back in time.
var errInputWait = errors.New("the client did not answer the input request in time")

// await waits, for the request of ctx (attached), for the call's result
// or its next questions, and answers the request with it.
func (bc *bridgedCall) await(ctx context.Context, req *mcp.CallToolRequest) (mcp.Result, error) {
	for {
		bc.mu.Lock()
		if bc.finished {
			bc.detachLocked()
			res := bc.res
			bc.mu.Unlock()
			bc.forget()
			if err := rpcErrorFor(bc.ctx, res); err != nil {
				return nil, err
			}
			return answerCall(bc.ctx, req, res), nil
		}
		if len(bc.asks) > 0 {
			asks := make(mcp.InputRequestMap, len(bc.asks))
			for k, q := range bc.asks {
				asks[k] = q.req
			}
			bc.round++
			bc.detachLocked()
			round := bc.round
			bc.timer = time.AfterFunc(bc.wait, func() { bc.expire(round) })
			state := bc.b.seal(bc.bind, openedState{kind: stateRound, id: bc.id, round: bc.round}, time.Now().Add(bc.wait))
			bc.mu.Unlock()
			return inputRequired{&mcp.CallToolResult{Content: []mcp.Content{}, InputRequests: asks, RequestState: state}}, nil
		}
		bc.mu.Unlock()
		select {
		case <-bc.event:
		case <-ctx.Done():
			// The client gave up (or cancelled): the call was cancelled
			// with it (attachLocked).
			bc.cancel(context.Cause(ctx))
			bc.mu.Lock()
			bc.detachLocked()
			bc.mu.Unlock()
			bc.forget()
			return nil, context.Cause(ctx)
		}
	}
}

// expire ends a call whose retry of round did not come within the wait.
func (bc *bridgedCall) expire(round uint64) {
	bc.mu.Lock()
	if bc.attached || bc.timer == nil || bc.round != round {
		bc.mu.Unlock()
		return
	}
	bc.timer = nil
	bc.mu.Unlock()
	bc.log.Info("mcpadapter: a call waiting for its client's input is cancelled: no retry came", slog.Duration("wait", bc.wait))
	bc.cancel(errInputWait)
	bc.forget()
}

// forget removes the call from those a retry may find.
func (bc *bridgedCall) forget() {
	bc.b.mu.Lock()
	if bc.b.calls[bc.id] == bc {
		delete(bc.b.calls, bc.id)
	}
	bc.b.mu.Unlock()
}

// resume is a retry of a bridged call: its answers go to the questions
// they answer, and the request waits for what comes next.
func (bc *bridgedCall) resume(ctx context.Context, req *mcp.CallToolRequest, round uint64) (mcp.Result, error, bool) {
	bc.mu.Lock()
	if bc.attached || bc.round != round || (bc.timer == nil && !bc.finished) {
		bc.mu.Unlock()
		return nil, nil, false
	}
	bc.attachLocked(ctx)
	for k, res := range req.Params.InputResponses {
		if q := bc.asks[k]; q != nil && res != nil {
			delete(bc.asks, k)
			q.answer <- res
		}
	}
	bc.mu.Unlock()
	res, err := bc.await(ctx, req)
	return res, err, true
}

// multiRound serves a tools/call of a 2026-07-28 client that may take
// rounds: a retry of a bridged call (its requestState toolgate's), or a
// call whose client declared something a method may ask of it (sampling,
// elicitation, roots), run bridged. handled is false for any other call,
// which is served as usual.
func (a *Adapter) multiRound(ctx context.Context, req *mcp.CallToolRequest) (res mcp.Result, err error, handled bool) {
	if req.Params == nil {
		return nil, nil, false
	}
	opened := false
	if state := req.Params.RequestState; strings.HasPrefix(state, statePrefix) {
		caller, _ := a.opts.Caller(ctx, req)
		bind := bindingOf(req, ownerOf(req, caller))
		st, err := a.bridges.open(bind, state)
		if err != nil {
			a.log.Info("mcpadapter: a requestState is refused", slog.String("tool", bind.tool), slog.String("reason", err.Error()))
			return nil, errInvalidState, true
		}
		switch st.kind {
		case stateSealed:
			// An upstream's own state: the relay hands it back
			// (Peer.RelayedRequestState).
			ctx, opened = context.WithValue(ctx, openedStateKey{}, st.inner), true
		case stateRound:
			a.bridges.mu.Lock()
			bc := a.bridges.calls[st.id]
			a.bridges.mu.Unlock()
			reason := "its call ended"
			if bc != nil && bc.bind == bind {
				if res, err, ok := bc.resume(ctx, req, st.round); ok {
					return res, err, true
				}
				reason = "replayed"
			}
			a.log.Info("mcpadapter: a requestState is refused", slog.String("tool", bind.tool), slog.String("reason", reason))
			return nil, errInvalidState, true
		default:
			return nil, errInvalidState, true
		}
	}
	caps := requestCapabilities(req)
	if caps == nil && req.Session != nil {
		if ip := req.Session.InitializeParams(); ip != nil {
			caps = ip.Capabilities
		}
	}
	if caps == nil || (caps.Sampling == nil && caps.Elicitation == nil && caps.RootsV2 == nil) {
		if opened {
			res, err := a.serveCall(ctx, req)
			return res, err, true
		}
		return nil, nil, false
	}
	return a.startBridged(ctx, req)
}

type openedStateKey struct{}

// serveCall is the governance middleware's answer to a tools/call.
func (a *Adapter) serveCall(ctx context.Context, req *mcp.CallToolRequest) (mcp.Result, error) {
	ctx, _ = withSentSlot(ctx)
	res := a.callSafely(ctx, req)
	if err := rpcErrorFor(ctx, res); err != nil {
		return nil, err
	}
	return answerCall(ctx, req, res), nil
}

// startBridged runs req's call bridged, and answers its first round.
func (a *Adapter) startBridged(ctx context.Context, req *mcp.CallToolRequest) (mcp.Result, error, bool) {
	caller, _ := a.opts.Caller(ctx, req)
	bc := &bridgedCall{b: &a.bridges, bind: bindingOf(req, ownerOf(req, caller)), wait: a.inputWait(), log: a.log, event: make(chan struct{}, 1)}
	run, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	run, _ = withSentSlot(run)
	bc.ctx, bc.cancel = context.WithValue(run, bridgedKey{}, bc), cancel
	a.bridges.mu.Lock()
	a.bridges.seq++
	bc.id = a.bridges.seq
	if a.bridges.calls == nil {
		a.bridges.calls = map[uint64]*bridgedCall{}
	}
	a.bridges.calls[bc.id] = bc
	a.bridges.mu.Unlock()
	bc.mu.Lock()
	bc.attachLocked(ctx)
	bc.mu.Unlock()
	go func() {
		defer cancel(nil)
		bc.finish(a.callSafely(bc.ctx, req))
	}()
	res, err := bc.await(ctx, req)
	return res, err, true
}

// ownerOf is the key of the identity of req's caller (Peer.Owner).
func ownerOf(req *mcp.CallToolRequest, caller *toolcall.Caller) string {
	if extra := req.GetExtra(); extra != nil && extra.TokenInfo != nil && extra.TokenInfo.UserID != "" {
		return extra.TokenInfo.UserID
	}
	if caller == nil {
		return ""
	}
	return "caller:" + caller.Subject
}

// inputWait is Options.InputWait or its default.
func (a *Adapter) inputWait() time.Duration {
	if a.opts.InputWait > 0 {
		return a.opts.InputWait
	}
	return DefaultInputWait
}
