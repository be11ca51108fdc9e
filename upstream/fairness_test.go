package upstream

//lint:file-ignore SA1019 sampling and roots are deprecated from protocol revision 2026-07-28 on; earlier revisions have them, and a caller's client sessions may declare them

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/internal/testkit/testserver"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/toolcall"
)

// relayAccount is a snapshot of an upstream's caller sessions.
type relayAccount struct {
	open    int
	byOwner map[string]int
	idle    []string // the idle sessions' owners, least recently used first
}

func (c *conn) account() relayAccount {
	r := &c.relay
	r.mu.Lock()
	defer r.mu.Unlock()
	a := relayAccount{open: r.open, byOwner: map[string]int{}}
	for o, n := range r.byOwner {
		a.byOwner[o] = n
	}
	for _, cs := range r.idle {
		a.idle = append(a.idle, cs.key.owner)
	}
	return a
}

// check reports what breaks the bounds: more than max open, a caller over
// its share, counts that do not add up.
func (a relayAccount) check(max, share int) error {
	sum := 0
	for o, n := range a.byOwner {
		if n > share {
			return fmt.Errorf("%s holds %d sessions, over its share of %d", o, n, share)
		}
		if n <= 0 {
			return fmt.Errorf("%s counted with %d sessions", o, n)
		}
		sum += n
	}
	switch {
	case a.open > max:
		return fmt.Errorf("%d sessions open, over %d", a.open, max)
	case sum != a.open:
		return fmt.Errorf("the callers' sessions add up to %d, %d are open", sum, a.open)
	case len(a.idle) > a.open:
		return fmt.Errorf("%d idle of %d open", len(a.idle), a.open)
	}
	return nil
}

func slowCall(ms int) *mcp.CallToolParams {
	return &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"ms": ms}}
}

// TestRelayCallerShare: a caller with its share of an upstream's caller
// sessions in flight gets, for one more call, the answer a full pool
// gives, even with room left; another caller's call succeeds, an idle
// session of a third caller being closed to make room; and when the
// pool is full with calls in flight the answer is that same one.
func TestRelayCallerShare(t *testing.T) {
	t.Parallel()
	const long = 3_600_000 // a call in flight until the test ends
	started, cancelled := make(chan int, 16), make(chan int, 16)
	srv := testserver.New(testserver.Options{
		SlowStarted: func(ms int) {
			if ms >= long {
				started <- ms
			}
		},
		SlowCancelled: func(ms int) { cancelled <- ms },
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	p, err := NewPool([]Config{{Name: "up", URL: ts.URL, Timeout: time.Hour}},
		&Options{MaxCallerSessions: 4, MaxCallerSessionsPerCaller: 2, TerminateGrace: 500 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	f := newRelayFrontPool(t, p)
	c := p.conns["up"]
	inFlight, stop := context.WithCancel(t.Context())
	held := 0
	// Before the client sessions close (a graceful close waits for their
	// calls) and the pool (closing a session at once could overtake the
	// cancellation the SDK sends upstream): end the calls held.
	defer func() {
		stop()
		for range held {
			recvBounded(t, cancelled)
		}
	}()
	hold := func(cs *mcp.ClientSession, ms ...int) {
		for _, m := range ms {
			go func() { _, _ = cs.CallTool(inFlight, slowCall(m)) }()
		}
		held += len(ms)
		want := map[int]bool{}
		for _, m := range ms {
			want[m] = true
		}
		for range ms {
			got := recvBounded(t, started)
			require.True(t, want[got], "call %d started", got)
			delete(want, got)
		}
	}

	// alice holds her share; one more call of hers is refused, although
	// the pool has room for two more sessions.
	alice, _ := f.connect("alice", nil)
	hold(alice, long, long+1)
	over, err := alice.CallTool(t.Context(), slowCall(0))
	require.NoError(t, err)
	require.True(t, over.IsError)
	assert.Equal(t, mcpadapter.AnswerInternal, textOf(t, over))
	acc := c.account()
	require.NoError(t, acc.check(4, 2))
	assert.Equal(t, 2, acc.open, "the refused call opened nothing")

	// carol and dave leave an idle session each: the pool is full.
	for _, s := range []string{"carol", "dave"} {
		cs, _ := f.connect(s, nil)
		assert.Equal(t, "slept 0", callText(t.Context(), t, cs, slowCall(0)))
	}
	require.Equal(t, []string{"caller:carol", "caller:dave"}, c.account().idle)

	// bob still gets a session: carol's, the least recently used idle
	// one, is closed to make room; alice's calls go on.
	bob, _ := f.connect("bob", nil)
	assert.Equal(t, "slept 0", callText(t.Context(), t, bob, slowCall(0)))
	acc = c.account()
	require.NoError(t, acc.check(4, 2))
	assert.Equal(t, []string{"caller:dave", "caller:bob"}, acc.idle)
	assert.Equal(t, 2, acc.byOwner["caller:alice"])

	// bob takes his share in flight (his idle session, and dave's closed
	// for room): the pool is full of calls, and erin gets the same answer
	// alice got past her share.
	hold(bob, long+10, long+11)
	acc = c.account()
	require.NoError(t, acc.check(4, 2))
	assert.Empty(t, acc.idle)
	erin, _ := f.connect("erin", nil)
	full, err := erin.CallTool(t.Context(), slowCall(0))
	require.NoError(t, err)
	assert.Equal(t, over, full, "past a caller's share, the answer of a full pool")
}

// TestRelayCallerShareAcrossClientSessions: a caller that opens client
// sessions each with other capabilities (each an upstream session key of
// its own) holds no more than its share: its own least recently used idle
// session is closed for its next, never another caller's.
func TestRelayCallerShareAcrossClientSessions(t *testing.T) {
	t.Parallel()
	p, err := NewPool([]Config{memoryConfig("up")}, &Options{MaxCallerSessions: 8, MaxCallerSessionsPerCaller: 2})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	f := newRelayFrontPool(t, p)
	c := p.conns["up"]
	carol, _ := f.connect("carol", nil)
	assert.Equal(t, "slept 0", callText(t.Context(), t, carol, slowCall(0)))

	capsets := []*mcp.ClientCapabilities{
		{},
		{RootsV2: &mcp.RootCapabilities{}},
		{RootsV2: &mcp.RootCapabilities{ListChanged: true}},
		{Sampling: &mcp.SamplingCapabilities{}},
		{Elicitation: &mcp.ElicitationCapabilities{}},
		{Sampling: &mcp.SamplingCapabilities{}, Elicitation: &mcp.ElicitationCapabilities{}},
	}
	for round := range 2 {
		for i, caps := range capsets {
			cs := f.connectCaps("alice", caps)
			assert.Equal(t, "slept 0", callText(t.Context(), t, cs, slowCall(0)), "round %d, capabilities %d", round, i)
			acc := c.account()
			require.NoError(t, acc.check(8, 2))
			assert.Contains(t, acc.idle, "caller:carol", "another caller's idle session is kept")
			assert.LessOrEqual(t, acc.byOwner["caller:alice"], 2)
		}
	}
}

// connectCaps opens a client session of subject that declares caps (and
// answers nothing the upstream asks).
func (f *relayFront) connectCaps(subject string, caps *mcp.ClientCapabilities) *mcp.ClientSession {
	t := f.t
	ct, st := mcp.NewInMemoryTransports()
	ss, err := f.server.Connect(t.Context(), st, nil)
	require.NoError(t, err)
	f.mu.Lock()
	f.caller[ss] = &toolcall.Caller{Subject: subject}
	f.mu.Unlock()
	opts := &mcp.ClientOptions{Capabilities: caps}
	if caps.Sampling != nil {
		opts.CreateMessageHandler = func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: subject}}, nil
		}
	}
	if caps.Elicitation != nil {
		opts.ElicitationHandler = func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "decline"}, nil
		}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: subject}, opts).Connect(t.Context(), ct, &mcp.ClientSessionOptions{ProtocolVersion: legacyRevision})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// TestRelayCallerShareUnderLoad: one caller floods an upstream with
// calls, many more at once than its share, round after round, while
// another caller calls it one call after the other: every call of the
// other caller succeeds, the flooding caller's calls succeed or get the
// full pool's answer, and at every moment looked at the bounds hold (run
// under -race).
func TestRelayCallerShareUnderLoad(t *testing.T) {
	t.Parallel()
	const max, share = 4, 2
	p, err := NewPool([]Config{memoryConfig("up")}, &Options{MaxCallerSessions: max, MaxCallerSessionsPerCaller: share})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	f := newRelayFrontPool(t, p)
	c := p.conns["up"]
	alice, _ := f.connect("alice", nil)
	bob, _ := f.connect("bob", nil)

	done := make(chan struct{})
	var checker sync.WaitGroup
	checker.Go(func() {
		for {
			if err := c.account().check(max, share); err != nil {
				t.Error(err)
				return
			}
			select {
			case <-done:
				return
			default:
			}
		}
	})
	var bobs sync.WaitGroup
	bobs.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			res, err := bob.CallTool(t.Context(), slowCall(1))
			if err != nil || res.IsError || len(res.Content) != 1 {
				t.Errorf("bob's call %d: %v %+v", i, err, res)
				return
			}
		}
	})
	const rounds, flood = 20, 3 * share
	refused := 0
	for range rounds {
		var wg sync.WaitGroup
		var mu sync.Mutex
		for range flood {
			wg.Go(func() {
				res, err := alice.CallTool(t.Context(), slowCall(1))
				if !assert.NoError(t, err) {
					return
				}
				if !assert.Len(t, res.Content, 1) {
					return
				}
				switch got := res.Content[0].(*mcp.TextContent).Text; got {
				case "slept 1":
				case mcpadapter.AnswerInternal:
					mu.Lock()
					refused++
					mu.Unlock()
				default:
					t.Errorf("alice's call: %q", got)
				}
			})
		}
		wg.Wait()
	}
	close(done)
	bobs.Wait()
	checker.Wait()
	t.Logf("alice's calls refused past her share: %d of %d", refused, rounds*flood)
	require.NoError(t, c.account().check(max, share))
}

// subscriptionSource lets every caller see the catalog's resources but
// those under file:///t/hidden.
var subscriptionSource = engine.Source{FS: fstest.MapFS{
	"registry.yaml": {Data: []byte("tools: []\n")},
	"policy/grant.rego": {Data: []byte(`package toolgate.grant

default resource := true

resource := false if startswith(input.resource.uri, "file:///t/hidden")
`)},
}, Registry: "registry.yaml", Policies: "policy"}

// TestSubscriptionsCappedPerSession: a signed-in caller subscribes one
// client session to as many URIs of a template as it likes; past
// mcpadapter.MaxSubscriptionsPerSession a new one gets the refusal, while a URI already subscribed, and one after an
// unsubscribe, still succeed; a hidden URI answers as one nothing serves,
// at the cap too. When the session ends, nothing of its subscriptions is
// left: every upstream subscription is ended (the pool's table is empty).
func TestSubscriptionsCappedPerSession(t *testing.T) {
	t.Parallel()
	upSubs, upUnsubs := make(chan string, 2*mcpadapter.MaxSubscriptionsPerSession), make(chan string, 2*mcpadapter.MaxSubscriptionsPerSession)
	p, err := NewPool([]Config{inMemory("cat", catalogServer(nil, upSubs, upUnsubs))}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	eng, err := engine.New(t.Context(), subscriptionSource)
	require.NoError(t, err)
	a := mcpadapter.New(mcpadapter.Options{Revisions: eng, Methods: p, Catalog: p,
		Caller: mcpadapter.StaticCaller(&toolcall.Caller{Subject: "mallory"})})
	server := a.NewServer(&mcp.Implementation{Name: "front"}, nil)
	ct, st := mcp.NewInMemoryTransports()
	ss, err := server.Connect(t.Context(), st, nil)
	require.NoError(t, err)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "mallory"}, nil).Connect(t.Context(), ct, &mcp.ClientSessionOptions{ProtocolVersion: legacyRevision})
	require.NoError(t, err)
	ctx := t.Context()
	subscribe := func(uri string) error { return cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}) }
	rpcError := func(err error) *jsonrpc.Error {
		t.Helper()
		var e *jsonrpc.Error
		require.ErrorAs(t, err, &e)
		return e
	}

	notFound := rpcError(subscribe("file:///nothing/here"))
	hiddenBefore := rpcError(subscribe("file:///t/hidden1"))
	assert.Equal(t, notFound.Code, hiddenBefore.Code)
	assert.Equal(t, notFound.Message, hiddenBefore.Message)
	for i := range mcpadapter.MaxSubscriptionsPerSession {
		require.NoError(t, subscribe(fmt.Sprintf("file:///t/%d", i)))
	}
	over := rpcError(subscribe("file:///t/one-more"))
	assert.Equal(t, int64(jsonrpc.CodeInvalidRequest), over.Code)
	assert.Equal(t, mcpadapter.AnswerTooManySubscriptions, over.Message)
	hidden := rpcError(subscribe("file:///t/hidden2"))
	assert.Equal(t, notFound.Code, hidden.Code, "hidden ≡ absent before any cap")
	assert.Equal(t, notFound.Message, hidden.Message)
	require.NoError(t, subscribe("file:///t/7"), "subscribed already: nothing new to hold")
	require.NoError(t, cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "file:///t/7"}))
	require.NoError(t, subscribe("file:///t/one-more"), "an unsubscribe makes room")

	subscribed := func() int {
		p.cat.mu.Lock()
		defer p.cat.mu.Unlock()
		return len(p.cat.subs)
	}
	assert.Equal(t, mcpadapter.MaxSubscriptionsPerSession, subscribed())

	// The session ends: every subscription is ended upstream.
	require.NoError(t, cs.Close())
	require.NoError(t, ss.Wait())
	for range mcpadapter.MaxSubscriptionsPerSession {
		recvBounded(t, upUnsubs)
	}
	assert.Zero(t, subscribed(), "nothing left of the session's subscriptions")
}
