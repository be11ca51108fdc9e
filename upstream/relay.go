package upstream

//lint:file-ignore SA1019 logging, sampling and roots are deprecated from protocol revision 2026-07-28 on; earlier revisions have them, and toolgate keeps what the server behind it does

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os/exec"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/identity"
	"github.com/toolgate/toolgate/internal/backend"
	"github.com/toolgate/toolgate/toolcall"
)

// The relay (docs/contract.md §16, docs/relay.md).
//
// Inside a governed call to an upstream tool, what the upstream sends the
// calling client (progress, log messages, sampling, elicitation and roots
// requests) and what the client sends back (answers, cancellation) flow
// between the two, and reach no other caller.
//
// How upstream sessions map to callers: a governed call runs on an
// upstream session of its own caller (keyed by the caller's identity key,
// Peer.Owner: identity source and subject, "token:alice" is not
// "jwt:alice"), and that session serves ONE call at a time: a call leases
// an idle session of its key or opens one, and returns it when it ends.
// Why:
//   - MCP ties nothing the upstream sends to the call it is for, except
//     progress (its token): log messages and sampling, elicitation and
//     roots requests carry no request id, and over stdio there is not even
//     a stream per request. On a session that serves one call at a time,
//     everything the upstream sends belongs to that call: the routing is
//     exact on both transports, whatever the upstream's stream discipline,
//     without rewriting anything. A caller with several calls in flight
//     has as many sessions (bounded below), never a shared one.
//   - A session is only ever leased to calls of one identity, so a message
//     that arrives late (after its call ended) can at worst reach a later
//     call of the same caller, never another caller; and a session whose
//     call was cancelled or failed is closed, not reused.
//   - Per-caller sessions are what per-caller credentials need (§17):
//     sessionTransport, below, is where a session's transport is built
//     knowing whom for.
//
// The key also holds the client's protocol revision and the capabilities
// it declared (sampling, elicitation, roots): the upstream session is
// opened with the same, so the upstream sees what it would see directly
// (a client without sampling is not asked to sample: the upstream knows,
// and never waits).
//
// Bounds, per upstream (Options): at most MaxCallerSessions caller
// sessions open at once (idle or in use); at most MaxIdleCallerSessions
// kept idle (by default as many as MaxCallerSessions over HTTP, where an
// idle session is cheap, so that as many callers as sessions each keep
// theirs; DefaultMaxIdleCallerSessions over stdio, where it is a
// process), the least recently used closed past it; an idle session is
// closed after CallerIdleTimeout. Only idle sessions are ever closed by
// these bounds: closing never cuts a call in flight. A call that finds
// MaxCallerSessions in use fails (ErrUnavailable), it does not wait.
//
// Fairness: each caller (identity key) holds at most its share,
// MaxCallerSessionsPerCaller (a quarter of MaxCallerSessions by default),
// idle or in use, so that one caller with many calls in flight (or many
// client sessions, each its own key) never takes every session of an
// upstream from the others. A call of a caller at its share closes that
// caller's own least recently used idle session (of another key) to make
// room, or fails exactly as a call past MaxCallerSessions does. At
// MaxCallerSessions, the least recently used idle session, whoever's,
// is closed before any call is refused.
//
// The shared session (conn.session) stays: it lists and imports the
// upstream's tools, and serves calls made without a Peer (a direct
// Invocation, outside a served call).

// Defaults of the relay's bounds (Options).
const (
	DefaultMaxCallerSessions     = 64
	callerShareDen               = 4  // MaxCallerSessionsPerCaller is 1/callerShareDen of MaxCallerSessions by default
	DefaultMaxIdleCallerSessions = 16 // for an upstream not reached over HTTP
	DefaultCallerIdleTimeout     = 2 * time.Minute
)

// SessionFor says whom an upstream session is opened for.
type SessionFor struct {
	// Owner is the caller's identity key (mcpadapter.Peer.Owner); "" for
	// the shared session.
	Owner string
	// Caller is the caller as the policy saw it; nil for the shared
	// session.
	Caller *toolcall.Caller
	// Token is the caller's verified access token, for an upstream that
	// exchanges it (docs/contract.md §17); nil for the shared session and
	// for callers without one.
	Token *identity.AccessToken
}

// sessionTransport builds the transport of one session to the upstream,
// opened for who: THE seam where per-caller credentials plug in (the HTTP
// client, hence headers and tokens, of a streamable HTTP upstream; the
// environment of a stdio upstream's process). cmd is the stdio process,
// nil otherwise. in, when not nil, counts the progress and log
// notifications the session reads (a caller session's, see inbox).
func (c *conn) sessionTransport(who SessionFor, in *inbox) (t mcp.Transport, cmd *exec.Cmd, err error) {
	switch {
	case c.cfg.Transport != nil:
		if t = c.cfg.Transport(); t == nil {
			return nil, nil, errors.New("connect: the transport factory returned nil")
		}
		return countedTransport(sentTransport{t}, in), nil, nil
	case c.cfg.URL != "":
		// An importing upstream's own notifications/tools/list_changed
		// (docs/contract.md §15) come on the standalone SSE stream of the
		// shared session; a caller's session needs only the streams of its
		// requests (where the upstream sends what concerns a call).
		return &mcp.StreamableClientTransport{
			Endpoint:             c.creds.ep.shown, // its secrets are added on the wire (endpoint.go)
			HTTPClient:           withParamHeaderTransport(sentClient(c.httpClient(who), in)),
			DisableStandaloneSSE: who.Owner != "" || !c.cfg.Import,
		}, nil, nil
	default:
		cmd = exec.Command(c.cfg.Command[0], c.cfg.Command[1:]...)
		cmd.Env = c.processEnv(who)
		cmd.Stderr = c.pool.opts.Stderr
		return countedTransport(sentTransport{&mcp.CommandTransport{Command: cmd, TerminateDuration: c.pool.opts.TerminateGrace}}, in), cmd, nil
	}
}

// httpClient is the HTTP client of a session opened for who (its headers
// and token, docs/contract.md §17): with token exchange, a caller session's
// requests all carry the token exchanged for who's access token; nil is
// http.DefaultClient.
func (c *conn) httpClient(who SessionFor) *http.Client { return c.creds.httpClientFor(who.Token) }

// processEnv is the environment of a stdio process started for who: PATH,
// HOME, LANG, TZ and TMPDIR and the upstream's env, or all of toolgate's
// with inherit_env (docs/contract.md §17).
func (c *conn) processEnv(SessionFor) []string { return c.creds.childEnv() }

// relayKey is what a caller session is leased by.
type relayKey struct {
	owner   string
	version string
	caps    capBits
	// token is the SHA-256 of the caller's access token when the upstream
	// exchanges it (docs/contract.md §17), zero otherwise: a session
	// carries the exchange of one token, the one every call it serves
	// arrived with (a caller's new token is another key; the session of
	// its old one is idle until it is closed).
	token [sha256.Size]byte
}

// relayKeyOf is the key of peer's call and whom its session is opened
// for. With token exchange, the call's own access token is part of both;
// a caller without one fails here (ErrNoSubjectToken), opening nothing.
func (c *conn) relayKeyOf(ctx context.Context, peer backend.Peer) (relayKey, SessionFor, error) {
	who := SessionFor{Owner: peer.Owner(), Caller: peer.Caller()}
	key := relayKey{owner: who.Owner, version: peer.ProtocolVersion(), caps: capsOf(peer.Capabilities())}
	if c.creds.perCaller() {
		who.Token = identity.AccessTokenFrom(ctx)
		raw := who.Token.Reveal()
		if raw == "" {
			return key, who, fmt.Errorf("upstream %s: %w: token exchange: %w", c.cfg.Name, ErrCredentials, ErrNoSubjectToken)
		}
		key.token = sha256.Sum256([]byte(raw))
	}
	return key, who, nil
}

// capBits are the client capabilities a caller session declares upstream.
type capBits uint8

const (
	capSampling capBits = 1 << iota
	capSamplingTools
	capSamplingContext
	capElicitation
	capElicitForm
	capElicitURL
	capRoots
	capRootsListChanged
)

func capsOf(c *mcp.ClientCapabilities) capBits {
	if c == nil {
		return 0
	}
	var b capBits
	if s := c.Sampling; s != nil {
		b |= capSampling
		if s.Tools != nil {
			b |= capSamplingTools
		}
		if s.Context != nil {
			b |= capSamplingContext
		}
	}
	if e := c.Elicitation; e != nil {
		b |= capElicitation
		if e.Form != nil {
			b |= capElicitForm
		}
		if e.URL != nil {
			b |= capElicitURL
		}
	}
	if r := c.RootsV2; r != nil {
		b |= capRoots
		if r.ListChanged {
			b |= capRootsListChanged
		}
	}
	return b
}

func (b capBits) capabilities() *mcp.ClientCapabilities {
	c := &mcp.ClientCapabilities{}
	if b&capSampling != 0 {
		c.Sampling = &mcp.SamplingCapabilities{}
		if b&capSamplingTools != 0 {
			c.Sampling.Tools = &mcp.SamplingToolsCapabilities{}
		}
		if b&capSamplingContext != 0 {
			c.Sampling.Context = &mcp.SamplingContextCapabilities{}
		}
	}
	if b&capElicitation != 0 {
		c.Elicitation = &mcp.ElicitationCapabilities{}
		if b&capElicitForm != 0 {
			c.Elicitation.Form = &mcp.FormElicitationCapabilities{}
		}
		if b&capElicitURL != 0 {
			c.Elicitation.URL = &mcp.URLElicitationCapabilities{}
		}
	}
	if b&capRoots != 0 {
		c.RootsV2 = &mcp.RootCapabilities{ListChanged: b&capRootsListChanged != 0}
	}
	return c
}

// callerSession is one caller session: an upstream session leased to one
// call at a time.
type callerSession struct {
	s   *session
	key relayKey
	// call is the call holding the lease, or the last one to (nil before
	// the first): what the upstream sends goes to it. It stays after the
	// call returned, until the next lease: the go-sdk client hands a
	// response over before the notifications queued ahead of it are
	// handled, so a progress or log message the upstream sent just before
	// its result is handled after the call returned, and still goes to
	// that call's client (never to another caller: a session is leased by
	// one identity only); one sent after its result is dropped (late).
	call atomic.Pointer[relayCall]
	// prev is the call before it: a late progress notification for it
	// (its token) still goes to its client after the next call leased the
	// session.
	prev atomic.Pointer[relayCall]
	// logging: the upstream announced logging. level is the level last
	// set upstream (only touched by the lease holder).
	logging  bool
	level    mcp.LoggingLevel
	lastUsed time.Time
	// in counts the notifications of a stdio session (nil otherwise).
	in *inbox
}

// inbox counts the progress and log notifications a caller session has
// read and those its handlers are done with. The go-sdk client hands a
// response to its caller as soon as it is read, before the notifications
// read ahead of it are handled: a call waits (settle) until every
// notification read before its result was relayed, so that the client
// gets them before the result, in the upstream's order. Over stdio (and
// an embedder's Transport) the connection counts what it reads
// (countingConn); over streamable HTTP the response bodies do, as the
// SDK reads them (sentBody): a call's result is read off its stream only
// after what the stream carried before it.
type inbox struct {
	mu      sync.Mutex
	read    uint64
	handled uint64
	idle    chan struct{} // closed when handled catches up; nil: nobody waits
}

func (b *inbox) gotRead() {
	b.mu.Lock()
	b.read++
	b.mu.Unlock()
}

func (b *inbox) gotHandled() {
	b.mu.Lock()
	b.handled++
	if b.handled >= b.read && b.idle != nil {
		close(b.idle)
		b.idle = nil
	}
	b.mu.Unlock()
}

// settle waits until the notifications read so far are handled, or ctx
// ends. It allocates only when it has to wait.
func (b *inbox) settle(ctx context.Context) {
	b.mu.Lock()
	if b.handled >= b.read {
		b.mu.Unlock()
		return
	}
	if b.idle == nil {
		b.idle = make(chan struct{})
	}
	ch := b.idle
	b.mu.Unlock()
	select {
	case <-ch:
	case <-ctx.Done():
	}
}

// countingTransport counts the notifications its connection reads into an
// inbox. Not for streamable HTTP: that client connection has methods of
// the SDK's own that a wrapper would hide (its bodies count instead).
type countingTransport struct {
	mcp.Transport
	in *inbox
}

// countedTransport is t counting into in; t itself when in is nil.
func countedTransport(t mcp.Transport, in *inbox) mcp.Transport {
	if in == nil {
		return t
	}
	return countingTransport{Transport: t, in: in}
}

func (t countingTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return countingConn{Connection: c, in: t.in}, nil
}

type countingConn struct {
	mcp.Connection
	in *inbox
}

func (c countingConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	if r, ok := m.(*jsonrpc.Request); ok && err == nil && !r.IsCall() && (r.Method == methodProgress || r.Method == methodLogMessage) {
		c.in.gotRead()
	}
	return m, err
}

const (
	methodProgress   = "notifications/progress"
	methodLogMessage = "notifications/message"
)

// relayCall is one call in flight on a caller session.
type relayCall struct {
	peer backend.Peer
	// ctx is the call's: what goes to the client is sent with it, so that
	// over streamable HTTP it travels on the call's own response stream.
	ctx   context.Context
	token any // the client's progressToken; nil: none
	// done: the call returned. A notification handled after that is sent
	// outside the call's request (over streamable HTTP, on the session's
	// standalone stream: the call's own stream has ended).
	done atomic.Bool
}

// notifyContext is the context a notification for rc is sent with.
func (rc *relayCall) notifyContext() context.Context {
	if rc.done.Load() {
		return context.Background()
	}
	return rc.ctx
}

// late reports whether a notification for rc, handled now, was sent after
// rc's result: such a one is not relayed (docs/relay.md), whatever the
// upstream's transport. A session reads in order and a call returns only
// once what was read before its result is handled (inbox.settle), so what
// is handled after is late. (Over streamable HTTP a caller session has no
// stream outside its calls' own: nothing sent after a result reaches
// toolgate at all.)
func (cs *callerSession) late(rc *relayCall) bool { return cs.in != nil && rc.done.Load() }

// relaySessions are an upstream's caller sessions.
type relaySessions struct {
	mu    sync.Mutex
	idle  []*callerSession // least recently used first
	open  int              // open, in use or being opened
	timer *time.Timer      // reaps idle sessions; nil when none is idle
	// byOwner counts the open sessions (idle, in use or being opened) of
	// each caller: its share (Options.MaxCallerSessionsPerCaller).
	byOwner map[string]int
	// byKey counts them by key; waits are the calls waiting for a
	// session of a key (lease).
	byKey map[relayKey]int
	waits map[relayKey]*keyWait
}

var (
	errTooManySessions = errors.New("too many caller sessions in use")
	errCallerShare     = errors.New("too many caller sessions in use by this caller")
)

// addLocked accounts for a session of key being opened. r.mu is held.
func (r *relaySessions) addLocked(key relayKey) {
	if r.byOwner == nil {
		r.byOwner = map[string]int{}
		r.byKey = map[relayKey]int{}
	}
	r.open++
	r.byOwner[key.owner]++
	r.byKey[key]++
}

// dropLocked ends the account of a session of key. r.mu is held.
func (r *relaySessions) dropLocked(key relayKey) {
	r.open--
	if r.byOwner[key.owner]--; r.byOwner[key.owner] <= 0 {
		delete(r.byOwner, key.owner)
	}
	if r.byKey[key]--; r.byKey[key] <= 0 {
		delete(r.byKey, key)
	}
}

// oldestIdleOf is the index in r.idle of owner's least recently used idle
// session; -1 when it has none. r.mu is held.
func (r *relaySessions) oldestIdleOf(owner string) int {
	for i, cs := range r.idle {
		if cs.key.owner == owner {
			return i
		}
	}
	return -1
}

// callRelayed runs one tools/call for peer's client on a session of its
// caller, relaying what flows during it.
func (c *conn) callRelayed(ctx context.Context, peer backend.Peer, tool string, args any) (*mcp.CallToolResult, error) {
	ctx, cancel := c.requestContext(ctx)
	defer cancel()
	key, who, err := c.relayKeyOf(ctx, peer)
	if err != nil {
		return nil, err
	}
	// The shared session says whether the upstream is up (with its
	// backoff): a down upstream fails its calls at once.
	if _, err := c.session(ctx); err != nil {
		return nil, fmt.Errorf("upstream %s: %w", c.cfg.Name, err)
	}
	cs, err := c.lease(ctx, key, who)
	if err != nil {
		return nil, fmt.Errorf("upstream %s: %w", c.cfg.Name, err)
	}
	rc := &relayCall{peer: peer, ctx: ctx, token: progressToken(peer.ProgressToken())}
	if cs.in != nil {
		// What the session read before this call is the last call's (sent
		// after its result: dropped, see late), never this one's.
		cs.in.settle(ctx)
	}
	cs.prev.Store(cs.call.Swap(rc))
	reuse := false
	defer func() { c.release(cs, reuse, ctx.Err() != nil) }()
	lv, levelSet := peer.LogLevel()
	perRequestLevel := false // the revision the upstream session speaks has no logging/setLevel
	if ir := cs.s.cs.InitializeResult(); ir != nil {
		perRequestLevel = ir.ProtocolVersion >= multiRoundTripRevision
	}
	if cs.logging && levelSet && !perRequestLevel && lv != cs.level {
		if err := cs.s.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: lv}); err == nil {
			cs.level = lv
		}
	}
	params := &mcp.CallToolParams{Name: tool, Arguments: args, Meta: traceMeta(ctx),
		InputResponses: peer.InputResponses(), RequestState: peer.RelayedRequestState()}
	if levelSet && perRequestLevel {
		// This revision has no logging/setLevel: the level the client
		// asked for goes with the call, as the client sent it.
		if params.Meta == nil {
			params.Meta = mcp.Meta{}
		}
		params.Meta[mcp.MetaKeyLogLevel] = lv
	}
	if rc.token != nil {
		if params.Meta == nil {
			params.Meta = mcp.Meta{}
		}
		params.Meta["progressToken"] = rc.token
	}
	def, _ := c.tool(tool)
	res, err := c.callBridged(ctx, cs, peer, def, params)
	if cs.in != nil {
		cs.in.settle(ctx)
	}
	rc.done.Store(true)
	if err == nil && res == nil {
		err = errors.New("no result")
	}
	// A session is reused after a result or the upstream's JSON-RPC error;
	// one whose call was cancelled, timed out or broke is closed: the
	// upstream may still be running that call, and nothing it sends for
	// it may reach a later one.
	reuse = ctx.Err() == nil && (err == nil || isRPCError(err))
	if err != nil {
		if cause := context.Cause(ctx); ctx.Err() != nil && cause != nil {
			err = fmt.Errorf("%w (%w)", cause, err)
		}
		return nil, fmt.Errorf("upstream %s: tools/call %s: %w", c.cfg.Name, tool, err)
	}
	return res, nil
}

// maxInputRounds bounds the rounds of one call bridged for a client of an
// older revision (as the go-sdk's client bounds its own).
const maxInputRounds = 10

// callBridged calls the upstream on cs (relaying as callRelayed says) and
// bridges revisions (docs/relay.md, "Revisions bridged"): an upstream of
// 2026-07-28 that answers input-required to a client of an older revision
// has its input requests asked of the client as requests of their own, on
// the call's stream, and is called again with the answers and its
// requestState, until it answers the call; for a client of 2026-07-28, the
// requestState of an input-required result is sealed for the client
// (Peer.SealRequestState).
func (c *conn) callBridged(ctx context.Context, cs *callerSession, peer backend.Peer, def *mcp.Tool, params *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	for round := 0; ; round++ {
		sentCtx, sent := withSent(ctx)
		res, err := cs.s.cs.CallTool(withParamHeaders(sentCtx, def, params.Arguments), params)
		if err != nil || res == nil || res.InputRequests == nil {
			if err == nil {
				sent.keep(ctx, res)
			}
			return res, err
		}
		if peer.MultiRoundTrip() {
			if res.RequestState != "" {
				res.RequestState = peer.SealRequestState(res.RequestState)
				sent.keepWith(ctx, res, "requestState", res.RequestState)
			} else {
				sent.keep(ctx, res)
			}
			return res, nil
		}
		if round+1 >= maxInputRounds {
			return nil, fmt.Errorf("the upstream asked for input %d times", maxInputRounds)
		}
		answers, err := askClient(ctx, peer, res.InputRequests)
		if err != nil {
			return nil, err
		}
		next := *params
		next.InputResponses, next.RequestState = answers, res.RequestState
		params = &next
	}
}

// askClient asks the calling client (of a revision with requests of the
// server's own) what an input-required result asks, and returns its
// answers.
func askClient(ctx context.Context, peer backend.Peer, asks mcp.InputRequestMap) (mcp.InputResponseMap, error) {
	answers := make(mcp.InputResponseMap, len(asks))
	for id, ask := range asks {
		var (
			ans mcp.InputResponse
			err error
		)
		switch p := ask.(type) {
		case *mcp.ElicitParams:
			var r *mcp.ElicitResult
			if r, err = peer.Elicit(ctx, p); err == nil {
				ans = r
			}
		case *mcp.CreateMessageWithToolsParams:
			var r *mcp.CreateMessageWithToolsResult
			if r, err = peer.CreateMessage(ctx, p); err == nil {
				ans = r
			}
		case *mcp.CreateMessageParams:
			var r *mcp.CreateMessageWithToolsResult
			if r, err = peer.CreateMessage(ctx, samplingWithTools(p)); err == nil {
				ans = r
			}
		case *mcp.ListRootsParams:
			var r *mcp.ListRootsResult
			if r, err = peer.ListRoots(ctx); err == nil {
				ans = r
			}
		default:
			err = fmt.Errorf("an input request of an unknown kind (%T)", ask)
		}
		if err != nil {
			return nil, fmt.Errorf("input request %q: %w", id, err)
		}
		answers[id] = ans
	}
	return answers, nil
}

// samplingWithTools is a sampling request of the older shape in the
// newer one.
func samplingWithTools(p *mcp.CreateMessageParams) *mcp.CreateMessageWithToolsParams {
	msgs := make([]*mcp.SamplingMessageV2, 0, len(p.Messages))
	for _, m := range p.Messages {
		msgs = append(msgs, &mcp.SamplingMessageV2{Content: []mcp.Content{m.Content}, Role: m.Role})
	}
	return &mcp.CreateMessageWithToolsParams{Meta: p.Meta, IncludeContext: p.IncludeContext, MaxTokens: p.MaxTokens,
		Messages: msgs, Metadata: p.Metadata, ModelPreferences: p.ModelPreferences, StopSequences: p.StopSequences,
		SystemPrompt: p.SystemPrompt, Temperature: p.Temperature}
}

// isRPCError reports whether err is (or wraps) the upstream's JSON-RPC
// error. A function of its own: the target errors.As writes to escapes,
// and a call that succeeded allocates none.
func isRPCError(err error) bool {
	var rpcErr *jsonrpc.Error
	return errors.As(err, &rpcErr)
}

// progressToken is a token the relay can compare: a string or a number.
func progressToken(t any) any {
	switch t.(type) {
	case string, float64, int64, int:
		return t
	}
	return nil
}

// lease returns an idle session of key, or one being opened for key,
// or opens one. Sessions of a key are opened one at a time, never raced
// (docs/relay.md, "Many at once"): a call that finds an open of its key
// in flight, or calls of its key already waiting, waits with them for the
// next session of its key, opened or released, whichever comes first; a
// failed open fails every call waiting for it, and the next call opens
// again. A call that finds no session of its key to wait for, and no room
// (MaxCallerSessions, its caller's share), fails at once.
func (c *conn) lease(ctx context.Context, key relayKey, who SessionFor) (*callerSession, error) {
	r := &c.relay
	r.mu.Lock()
	if c.isClosed() {
		r.mu.Unlock()
		return nil, ErrClosed
	}
	for i := len(r.idle) - 1; i >= 0; i-- {
		cs := r.idle[i]
		if cs.key != key {
			continue
		}
		r.idle = append(r.idle[:i], r.idle[i+1:]...)
		if cs.s.alive() {
			r.mu.Unlock()
			return cs, nil
		}
		r.dropLocked(cs.key)
		c.pool.wg.Go(func() { c.closeSession(cs.s) })
	}
	kw := r.waits[key]
	if kw == nil || !kw.opening {
		err := c.roomLocked(key.owner)
		switch {
		case err == nil:
			kw = c.openLocked(key, who)
		case kw == nil || len(kw.queue) == 0:
			r.mu.Unlock()
			return nil, err
		}
		// Else calls of this key already wait for one of its sessions
		// in use: this one waits with them.
	}
	w := make(chan leased, 1)
	kw.queue = append(kw.queue, w)
	r.mu.Unlock()

	select {
	case l := <-w:
		return l.cs, l.err
	case <-ctx.Done():
	}
	r.mu.Lock()
	if i := slices.Index(kw.queue, w); i >= 0 {
		kw.queue = slices.Delete(kw.queue, i, i+1)
		r.forgetLocked(key, kw)
		r.mu.Unlock()
		return nil, fmt.Errorf("%w: still connecting: %w", ErrUnavailable, context.Cause(ctx))
	}
	r.mu.Unlock()
	// A session (or a failure) was handed over as ctx ended: pass the
	// session on.
	if l := <-w; l.cs != nil {
		c.release(l.cs, true, false)
	}
	return nil, fmt.Errorf("%w: %w", ErrUnavailable, context.Cause(ctx))
}

// keyWait is the calls waiting for a session of one key.
type keyWait struct {
	queue   []chan leased // first come, first served
	opening bool          // a session of the key is being opened
	who     SessionFor    // whom the key's sessions are opened for
}

// leased is what a waiting call is handed: a session, or why none.
type leased struct {
	cs  *callerSession
	err error
}

// forgetLocked drops kw when nothing waits on it any more. r.mu is held.
func (r *relaySessions) forgetLocked(key relayKey, kw *keyWait) {
	if len(kw.queue) == 0 && !kw.opening && r.waits[key] == kw {
		delete(r.waits, key)
	}
}

// roomLocked makes room for one more session of owner, closing an idle
// session if need be, or says why there is none: at its share, its own
// least recently used idle session (of another key: none of this key is
// idle) makes room, or the call fails as at MaxCallerSessions; at
// MaxCallerSessions, the least recently used idle session, whoever's.
// r.mu is held.
func (c *conn) roomLocked(owner string) error {
	r := &c.relay
	if share := c.pool.opts.MaxCallerSessionsPerCaller; r.byOwner[owner] >= share {
		i := r.oldestIdleOf(owner)
		if i < 0 {
			return fmt.Errorf("%w: %w (%d)", ErrUnavailable, errCallerShare, share)
		}
		c.evictLocked(i)
	}
	if r.open >= c.pool.opts.MaxCallerSessions {
		if len(r.idle) == 0 {
			return fmt.Errorf("%w: %w (%d)", ErrUnavailable, errTooManySessions, c.pool.opts.MaxCallerSessions)
		}
		c.evictLocked(0)
	}
	return nil
}

// openLocked accounts for a session of key and opens it in the
// background; it returns the key's waiters. r.mu is held, and there is
// room (roomLocked).
func (c *conn) openLocked(key relayKey, who SessionFor) *keyWait {
	r := &c.relay
	r.addLocked(key)
	kw := r.waits[key]
	if kw == nil {
		if r.waits == nil {
			r.waits = map[relayKey]*keyWait{}
		}
		kw = &keyWait{who: who}
		r.waits[key] = kw
	}
	kw.opening = true
	c.pool.wg.Go(func() { c.opened(key, kw) })
	return kw
}

// opened opens a session of key and hands it to the first call waiting
// for one (or keeps it idle when none waits any more); a failure goes to
// every call waiting. When calls still wait and there is room, the next
// session of the key is opened.
func (c *conn) opened(key relayKey, kw *keyWait) {
	cs, err := c.openCaller(key, kw.who)
	r := &c.relay
	r.mu.Lock()
	defer r.mu.Unlock()
	kw.opening = false
	if err == nil && c.isClosed() {
		c.pool.wg.Go(func() { c.closeSession(cs.s) })
		err = ErrClosed
	}
	if err != nil {
		r.dropLocked(key)
		for _, w := range kw.queue {
			w <- leased{err: err}
		}
		kw.queue = nil
		r.forgetLocked(key, kw)
		return
	}
	c.handOutLocked(cs)
	c.moreLocked(key)
}

// moreLocked opens one more session of key when calls wait for one, none
// is being opened and there is room; when there is no room and no session
// of key is left to be released to them, they fail. r.mu is held.
func (c *conn) moreLocked(key relayKey) {
	r := &c.relay
	kw := r.waits[key]
	if kw == nil || kw.opening || len(kw.queue) == 0 {
		return
	}
	err := c.roomLocked(key.owner)
	switch {
	case err == nil:
		c.openLocked(key, kw.who)
	case r.byKey[key] == 0:
		for _, w := range kw.queue {
			w <- leased{err: err}
		}
		kw.queue = nil
		r.forgetLocked(key, kw)
	}
}

// handOutLocked gives cs to the first call waiting for a session of its
// key, or keeps it idle. r.mu is held.
func (c *conn) handOutLocked(cs *callerSession) {
	r := &c.relay
	if kw := r.waits[cs.key]; kw != nil && len(kw.queue) > 0 {
		w := kw.queue[0]
		kw.queue = slices.Delete(kw.queue, 0, 1)
		r.forgetLocked(cs.key, kw)
		w <- leased{cs: cs}
		return
	}
	cs.lastUsed = time.Now()
	r.idle = append(r.idle, cs)
	if len(r.idle) > c.maxIdle {
		c.evictLocked(0)
	}
	if r.timer == nil {
		r.timer = time.AfterFunc(c.pool.opts.CallerIdleTimeout, c.reapIdle)
	}
}

// release returns a session after its call: to the idle ones, or closed.
// The session of a cancelled call is closed after TerminateGrace (or at
// Pool.Close): the SDK sends the upstream notifications/cancelled on a
// goroutine of its own, which closing the session at once could overtake
// (and an HTTP upstream waits for its calls in flight before it ends a
// session).
func (c *conn) release(cs *callerSession, reuse, cancelled bool) {
	r := &c.relay
	r.mu.Lock()
	defer r.mu.Unlock()
	if !reuse || c.isClosed() || !cs.s.alive() {
		r.dropLocked(cs.key)
		c.pool.wg.Go(func() {
			if cancelled {
				t := time.NewTimer(c.pool.opts.TerminateGrace)
				select {
				case <-t.C:
				case <-c.pool.ctx.Done():
					t.Stop()
				}
			}
			c.closeSession(cs.s)
		})
		c.moreLocked(cs.key)
		return
	}
	c.handOutLocked(cs)
}

// evictLocked closes the idle session at i. r.mu is held.
func (c *conn) evictLocked(i int) {
	r := &c.relay
	cs := r.idle[i]
	r.idle = append(r.idle[:i], r.idle[i+1:]...)
	r.dropLocked(cs.key)
	c.pool.wg.Go(func() { c.closeSession(cs.s) })
}

// reapIdle closes the sessions idle for CallerIdleTimeout, and runs again
// when the oldest of the others will be.
func (c *conn) reapIdle() {
	r := &c.relay
	r.mu.Lock()
	defer r.mu.Unlock()
	r.timer = nil
	if c.isClosed() {
		return
	}
	idle := c.pool.opts.CallerIdleTimeout
	now := time.Now()
	for len(r.idle) > 0 && now.Sub(r.idle[0].lastUsed) >= idle {
		c.evictLocked(0)
	}
	if len(r.idle) > 0 {
		r.timer = time.AfterFunc(idle-now.Sub(r.idle[0].lastUsed), c.reapIdle)
	}
}

// shutdownRelay closes the idle caller sessions (Pool.Close); those in use
// are closed when their call returns, which Pool.Close makes prompt.
func (c *conn) shutdownRelay() {
	r := &c.relay
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.timer != nil {
		r.timer.Stop()
		r.timer = nil
	}
	for len(r.idle) > 0 {
		c.evictLocked(0)
	}
}

func (c *conn) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// openCaller opens a caller session for key, on behalf of who. It runs
// on the pool's context, bounded by its connect timeout, not on any call's: the
// calls waiting for it share it (lease), whichever of them gives up, and
// nothing of a call's context reaches the upstream's handshake (the go-sdk
// reads a protocol revision from a served request's context: the
// client's revision would go upstream as MCP-Protocol-Version on
// initialize). What toolgate means to pass is explicit: who, and the
// revision and capabilities of key.
func (c *conn) openCaller(key relayKey, who SessionFor) (*callerSession, error) {
	ctx, cancel := context.WithTimeout(c.pool.ctx, c.connectTimeout())
	defer cancel()
	cs := &callerSession{key: key}
	dial := func() (mcp.Transport, *exec.Cmd, error) {
		cs.in = &inbox{}
		return c.sessionTransport(who, cs.in)
	}
	version := key.version
	asks := key.caps&(capSampling|capElicitation|capRoots) != 0
	if asks && version < multiRoundTripRevision && c.sessionless.Load() {
		version = multiRoundTripRevision
	}
	sess, cmd, err := c.connectClient(ctx, c.newCallerClient(cs, key.caps), dial, version) // handshake.go
	if err != nil {
		return nil, fmt.Errorf("connect for %s: %w", key.owner, err)
	}
	if asks && version < multiRoundTripRevision && c.cfg.URL != "" && sess.ID() == "" {
		// A streamable HTTP upstream without sessions cannot ask an
		// older client anything during a call (its requests would have
		// nowhere to come back to); on 2026-07-28 it asks in
		// input-required results, which callBridged asks of the client.
		// Remembered: the next sessions open so at once.
		if s2, cmd2, err := c.connectClient(ctx, c.newCallerClient(cs, key.caps), dial, multiRoundTripRevision); err == nil {
			if ir := s2.InitializeResult(); ir != nil && ir.ProtocolVersion >= multiRoundTripRevision {
				c.sessionless.Store(true)
				_ = sess.Close()
				sess, cmd = s2, cmd2
			} else {
				_ = s2.Close()
			}
		}
	}
	cs.s = &session{cs: sess, cmd: cmd, done: make(chan struct{})}
	if ir := sess.InitializeResult(); ir != nil && ir.Capabilities != nil && ir.Capabilities.Logging != nil {
		cs.logging = true
	}
	s := cs.s
	c.pool.wg.Go(func() {
		_ = sess.Wait()
		close(s.done)
	})
	c.pool.log.Debug("upstream: caller session opened", slog.String("upstream", c.cfg.Name), slog.String("owner", key.owner))
	return cs, nil
}

// multiRoundTripRevision is the first protocol revision without
// server-to-client requests or logging/setLevel (input-required results
// and a log level per request instead).
const multiRoundTripRevision = "2026-07-28"

// errNoCall answers an upstream's request that arrives when no call holds
// the session.
var errNoCall = &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "no call in progress"}

// newCallerClient is the client of a caller session: it declares the
// calling client's capabilities, and hands what the upstream sends to the
// call holding the session. The multi round-trip middleware is off: an
// input-required result (2026-07-28) goes to the client as it is, and the
// client's answers come back with its next call (Peer.InputResponses).
func (c *conn) newCallerClient(cs *callerSession, caps capBits) *mcp.Client {
	opts := &mcp.ClientOptions{
		Capabilities:   caps.capabilities(),
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			if cs.in != nil {
				defer cs.in.gotHandled()
			}
			if rc := cs.call.Load(); rc != nil && req.Params != nil && !cs.late(rc) {
				_ = rc.peer.LogMessage(rc.notifyContext(), req.Params)
			}
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			if cs.in != nil {
				defer cs.in.gotHandled()
			}
			if req.Params == nil {
				return
			}
			for _, rc := range [2]*relayCall{cs.call.Load(), cs.prev.Load()} {
				if rc != nil && rc.token != nil && sameToken(rc.token, req.Params.ProgressToken) {
					if !cs.late(rc) {
						_ = rc.peer.NotifyProgress(rc.notifyContext(), req.Params)
					}
					return
				}
			}
		},
	}
	if caps&capSampling != 0 {
		opts.CreateMessageWithToolsHandler = func(_ context.Context, req *mcp.CreateMessageWithToolsRequest) (*mcp.CreateMessageWithToolsResult, error) {
			rc := cs.call.Load()
			if rc == nil {
				return nil, errNoCall
			}
			if rc.done.Load() {
				return nil, errNoCall
			}
			return rc.peer.CreateMessage(rc.ctx, req.Params)
		}
	}
	if caps&capElicitation != 0 {
		// Answered by the middleware below; the handler declares the
		// capability.
		opts.ElicitationHandler = func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) { return nil, errNoCall }
	}
	c.listChangedHandlers(cs, opts)
	client := mcp.NewClient(&mcp.Implementation{Name: "toolgate", Version: "v1"}, opts)
	// roots/list, and elicitation/create as sent: the go-sdk client checks
	// a requested schema against what it supports, and the answer against
	// the schema, before its handler; the calling client (and the front
	// server session) judge them as they would directly.
	client.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			switch {
			case method == methodListRoots && caps&capRoots != 0:
			case method == methodElicit && caps&capElicitation != 0:
			default:
				return next(ctx, method, req)
			}
			rc := cs.call.Load()
			if rc == nil || rc.done.Load() {
				return nil, errNoCall
			}
			if method == methodListRoots {
				return rc.peer.ListRoots(rc.ctx)
			}
			params, _ := req.GetParams().(*mcp.ElicitParams)
			return rc.peer.Elicit(rc.ctx, params)
		}
	})
	return client
}

const (
	methodListRoots = "roots/list"
	methodElicit    = "elicitation/create"
)

// sameToken compares progress tokens of the kinds progressToken keeps
// (never two values of a type == would panic on).
func sameToken(sent, got any) bool {
	switch s := sent.(type) {
	case string:
		g, ok := got.(string)
		return ok && g == s
	case float64:
		switch g := got.(type) {
		case float64:
			return g == s
		case int64:
			return float64(g) == s
		case int:
			return float64(g) == s
		}
	case int64:
		switch g := got.(type) {
		case float64:
			return g == float64(s)
		case int64:
			return g == s
		}
	case int:
		switch g := got.(type) {
		case float64:
			return g == float64(s)
		case int:
			return g == s
		}
	}
	return false
}

// OffersLogging reports whether an upstream announced the logging
// capability when its shared session was opened, or is not up yet (it may
// offer it once it is): the governed server then announces it too
// (docs/contract.md §16).
func (p *Pool) OffersLogging() bool {
	for _, name := range p.order {
		c := p.conns[name]
		c.mu.Lock()
		s := c.sess
		c.mu.Unlock()
		if s == nil {
			// Not up (yet): it may offer logging once it is, and
			// initialize is answered before the upstreams' start ends.
			return true
		}
		if ir := s.cs.InitializeResult(); ir != nil && ir.Capabilities != nil && ir.Capabilities.Logging != nil {
			return true
		}
	}
	return false
}
