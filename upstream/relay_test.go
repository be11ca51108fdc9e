package upstream

//lint:file-ignore SA1019 logging, sampling and roots are deprecated from protocol revision 2026-07-28 on; earlier revisions have them, and toolgate keeps what the server behind it does

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/internal/testkit/testserver"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/toolcall"
)

// relayRegistry grants interact and slow of the upstream "up" to every
// signed-in caller.
var relayRegistry = engine.Source{FS: fstest.MapFS{
	"registry.yaml": {Data: []byte(`
tools:
  - name: interact
    method: upstream:up/interact
    arguments: [{name: label, type: string, required: true}, {name: force, type: bool}]
  - name: slow
    method: upstream:up/slow
    arguments: [{name: ms, type: int, required: true}]
`)},
	"policy/grant.rego": {Data: []byte("package toolgate.grant\n")},
}, Registry: "registry.yaml", Policies: "policy"}

const legacyRevision = "2025-11-25"

// relayFront is a governed server in front of the upstream "up", whose
// sessions each have a caller of their own (the subject given to connect).
type relayFront struct {
	t      testing.TB
	server *mcp.Server
	mu     sync.Mutex
	caller map[*mcp.ServerSession]*toolcall.Caller
	conns  map[string]mcp.Connection // the server end of each subject's transport
}

// keptTransport keeps the connection it made.
type keptTransport struct {
	mcp.Transport
	conn mcp.Connection
}

func (k *keptTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := k.Transport.Connect(ctx)
	k.conn = c
	return c, err
}

func newRelayFront(t testing.TB, up Config) *relayFront {
	t.Helper()
	return newRelayFrontPool(t, newPool(t, up))
}

func newRelayFrontPool(t testing.TB, p *Pool) *relayFront {
	t.Helper()
	eng, err := engine.New(t.Context(), relayRegistry, engine.WithTimeout(10*time.Second))
	require.NoError(t, err)
	f := &relayFront{t: t, caller: map[*mcp.ServerSession]*toolcall.Caller{}, conns: map[string]mcp.Connection{}}
	a := mcpadapter.New(mcpadapter.Options{Revisions: eng, Methods: p, Logging: true,
		Caller: func(_ context.Context, req mcp.Request) (*toolcall.Caller, string) {
			ss, _ := req.GetSession().(*mcp.ServerSession)
			f.mu.Lock()
			defer f.mu.Unlock()
			return f.caller[ss], hooks.SourceLocal
		}})
	f.server = a.NewServer(&mcp.Implementation{Name: "front"}, nil)
	return f
}

// peerLog is what one client received from the relay.
type peerLog struct {
	mu       sync.Mutex
	logs     []string
	progress []string
	changed  chan struct{} // closed and replaced at each message
}

func (l *peerLog) add(list *[]string, s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	*list = append(*list, s)
	close(l.changed)
	l.changed = make(chan struct{})
}

// await waits until the client received n log and p progress messages
// (the go-sdk client may handle a notification after the call's result).
func (l *peerLog) await(t *testing.T, n, p int) {
	t.Helper()
	for {
		l.mu.Lock()
		ok, ch := len(l.logs) >= n && len(l.progress) >= p, l.changed
		l.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-time.After(failureBound):
			logs, progress := l.snapshot()
			t.Fatalf("want %d log and %d progress messages, got %q and %q", n, p, logs, progress)
		}
	}
}

func (l *peerLog) snapshot() (logs, progress []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.logs...), append([]string(nil), l.progress...)
}

// connect opens a client session as subject, with sampling, elicitation
// and roots answered with the subject in them; onSample runs before the
// sampling answer (a test's barrier).
func (f *relayFront) connect(subject string, onSample func(context.Context)) (*mcp.ClientSession, *peerLog) {
	return f.connectRevision(subject, onSample, legacyRevision)
}

// connectRevision is connect on a protocol revision of the caller's choice.
func (f *relayFront) connectRevision(subject string, onSample func(context.Context), revision string) (*mcp.ClientSession, *peerLog) {
	t := f.t
	ct, st := mcp.NewInMemoryTransports()
	kept := &keptTransport{Transport: st}
	ss, err := f.server.Connect(t.Context(), kept, nil)
	require.NoError(t, err)
	f.mu.Lock()
	f.caller[ss] = &toolcall.Caller{Subject: subject}
	f.conns[subject] = kept.conn
	f.mu.Unlock()
	got := &peerLog{changed: make(chan struct{})}
	client := mcp.NewClient(&mcp.Implementation{Name: subject}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{}},
		CreateMessageHandler: func(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			if onSample != nil {
				onSample(ctx)
			}
			prompt := req.Params.Messages[0].Content.(*mcp.TextContent).Text
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: subject + ":" + prompt}}, nil
		},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": subject + ":" + req.Params.Message}}, nil
		},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			got.add(&got.logs, fmt.Sprint(req.Params.Data))
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			got.add(&got.progress, fmt.Sprintf("%v %v/%v %s", req.Params.ProgressToken, req.Params.Progress, req.Params.Total, req.Params.Message))
		},
	})
	client.AddRoots(&mcp.Root{URI: "file:///" + subject})
	// The revision with server-to-client requests (2026-07-28 has input
	// requests instead: the upstream session mirrors the client's).
	cs, err := client.Connect(t.Context(), ct, &mcp.ClientSessionOptions{ProtocolVersion: revision})
	require.NoError(t, err)
	require.Equal(t, revision, cs.InitializeResult().ProtocolVersion, "the revision asked for is the one spoken")
	t.Cleanup(func() { _ = cs.Close() })
	require.NoError(t, cs.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: "info"}))
	return cs, got
}

func callText(ctx context.Context, t *testing.T, cs *mcp.ClientSession, params *mcp.CallToolParams) string {
	t.Helper()
	res, err := cs.CallTool(ctx, params)
	require.NoError(t, err)
	require.Len(t, res.Content, 1)
	return res.Content[0].(*mcp.TextContent).Text
}

// TestRelay: inside a governed call to an upstream tool, over streamable
// HTTP and over stdio, the client's progressToken reaches the upstream and
// its progress comes back, the upstream's log message reaches the client,
// and its sampling, elicitation and roots requests are answered by the
// calling client (docs/contract.md §16).
func TestRelay(t *testing.T) {
	t.Parallel()
	httpUp, _ := httpConfig(t, "up")
	overEachTransport(t, httpUp, func(t *testing.T, _ string, f *relayFront) {
		cs, got := f.connect("alice", nil)
		params := &mcp.CallToolParams{Name: "interact", Arguments: map[string]any{"label": "L1"}}
		params.SetProgressToken("tok-1")
		assert.Equal(t, "L1 sampled=alice:L1 elicited=accept:alice:L1 roots=file:///alice", callText(t.Context(), t, cs, params))
		got.await(t, 1, 2)
		logs, progress := got.snapshot()
		assert.Equal(t, []string{"L1"}, logs)
		assert.Equal(t, []string{"tok-1 1/2 L1", "tok-1 2/2 L1"}, progress)

		// Several calls of one caller, one after the other, reuse its
		// session; each relays only its own.
		params = &mcp.CallToolParams{Name: "interact", Arguments: map[string]any{"label": "L2"}}
		assert.Equal(t, "L2 sampled=alice:L2 elicited=accept:alice:L2 roots=file:///alice", callText(t.Context(), t, cs, params))
		got.await(t, 2, 2)
		logs, progress = got.snapshot()
		assert.Equal(t, []string{"L1", "L2"}, logs)
		assert.Len(t, progress, 2, "no progressToken, no progress")
	})
}

// TestRelayMultiRoundTrip: on the 2026-07-28 revision, which has no
// server-to-client requests, what replaces them is relayed the same way
// (docs/contract.md §16, docs/relay.md): the upstream's input-required
// result (sampling, elicitation and roots asked in inputRequests, with a
// requestState) goes to the calling client, whose SDK answers and retries
// the call; the retried call brings its inputResponses and requestState
// to the upstream, which answers from them. Progress and log messages of
// both rounds reach that client. Two callers at once, many rounds, over
// streamable HTTP and stdio: each sees only its own.
func TestRelayMultiRoundTrip(t *testing.T) {
	t.Parallel()
	// The go-sdk serves this revision over streamable HTTP only without
	// sessions (a stateful handler answers its discover on the revision
	// before; see TestRelayMultiRoundTripOlderUpstream).
	srv := testserver.New(testserver.Options{})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(ts.Close)
	httpUp := Config{Name: "up", URL: ts.URL, Timeout: 5 * time.Second}
	overEachTransport(t, httpUp, func(t *testing.T, _ string, f *relayFront) {
		as, alog := f.connectRevision("alice", nil, testserver.MultiRoundTripRevision)
		bs, blog := f.connectRevision("bob", nil, testserver.MultiRoundTripRevision)
		const rounds = 10
		var wg sync.WaitGroup
		for _, c := range []struct {
			subject string
			cs      *mcp.ClientSession
		}{{"alice", as}, {"bob", bs}} {
			wg.Go(func() {
				for i := range rounds {
					label := fmt.Sprintf("%s-%d", c.subject, i)
					params := &mcp.CallToolParams{Name: "interact", Arguments: map[string]any{"label": label}}
					params.SetProgressToken("tok-" + label)
					// This revision has no logging/setLevel: the level
					// comes with each request.
					params.Meta[mcp.MetaKeyLogLevel] = "info"
					assert.Equal(t, fmt.Sprintf("%[1]s sampled=%[2]s:%[1]s elicited=accept:%[2]s:%[1]s roots=file:///%[2]s state=ok", label, c.subject),
						callText(t.Context(), t, c.cs, params))
				}
			})
		}
		wg.Wait()
		for _, c := range []struct {
			subject string
			log     *peerLog
		}{{"alice", alog}, {"bob", blog}} {
			// Each round logs once and reports progress 1/2 in its
			// first call, 2/2 in the retried one, each before its
			// result whatever the upstream's transport (docs/relay.md,
			// Ordering): this revision has no standalone stream to
			// carry one relayed after the result. (The test's own
			// go-sdk client, too, may hand the result over before it
			// handled what came ahead of it: await.)
			c.log.await(t, rounds, 2*rounds)
			logs, progress := c.log.snapshot()
			require.Len(t, logs, rounds, "%s: %q", c.subject, logs)
			require.Len(t, progress, 2*rounds, "%s: %q", c.subject, progress)
			for _, l := range logs {
				assert.True(t, strings.HasPrefix(l, c.subject+"-"), "%s got the log message %q", c.subject, l)
			}
			for _, p := range progress {
				assert.True(t, strings.HasPrefix(p, "tok-"+c.subject+"-"), "%s got the progress %q", c.subject, p)
			}
		}
	})
}

// TestRelayLogLevel: the upstream's log messages reach the client
// filtered by the level it set with logging/setLevel, which is forwarded
// upstream before a call whose level differs (docs/contract.md §16): at
// "error" the interact tool's info message is not relayed, and after the
// client sets "info" the next call's is. Messages of one connection arrive
// in order, so had the first call's message been relayed it would be
// there before the second's.
func TestRelayLogLevel(t *testing.T) {
	t.Parallel()
	httpUp, _ := httpConfig(t, "up")
	overEachTransport(t, httpUp, func(t *testing.T, _ string, f *relayFront) {
		cs, got := f.connect("alice", nil)
		require.NoError(t, cs.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: "error"}))
		params := &mcp.CallToolParams{Name: "interact", Arguments: map[string]any{"label": "quiet"}}
		params.SetProgressToken("t1")
		assert.Equal(t, "quiet sampled=alice:quiet elicited=accept:alice:quiet roots=file:///alice", callText(t.Context(), t, cs, params))
		got.await(t, 0, 2)
		require.NoError(t, cs.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: "info"}))
		params = &mcp.CallToolParams{Name: "interact", Arguments: map[string]any{"label": "loud"}}
		assert.Equal(t, "loud sampled=alice:loud elicited=accept:alice:loud roots=file:///alice", callText(t.Context(), t, cs, params))
		got.await(t, 1, 2)
		logs, _ := got.snapshot()
		assert.Equal(t, []string{"loud"}, logs, "the message below the level set was not relayed")
	})
}

// TestRelayMultiRoundTripOlderUpstream: a client of the 2026-07-28
// revision in front of an upstream that speaks only an older one (here a
// stateful streamable HTTP server, which the go-sdk cannot serve on
// 2026-07-28). The upstream's calls get the older revision; its progress
// and log messages (at the level the client sends with the call, set
// upstream with logging/setLevel) reach the calling client, and its
// sampling, elicitation and roots requests, which that client's revision
// cannot carry, are bridged (docs/contract.md §19): each reaches the
// client in an input-required result, and its answer, brought by the
// client's retry, goes back to the upstream's request, kept open.
func TestRelayMultiRoundTripOlderUpstream(t *testing.T) {
	t.Parallel()
	httpUp, _ := httpConfig(t, "up")
	f := newRelayFront(t, httpUp)
	cs, got := f.connectRevision("alice", nil, testserver.MultiRoundTripRevision)
	ctx, cancel := context.WithTimeout(t.Context(), failureBound)
	defer cancel()
	params := &mcp.CallToolParams{Name: "interact", Arguments: map[string]any{"label": "L"}}
	params.SetProgressToken("tok")
	// The level the client sends with the call reaches the older upstream
	// as its logging/setLevel.
	params.Meta[mcp.MetaKeyLogLevel] = "info"
	assert.Equal(t, "L sampled=alice:L elicited=accept:alice:L roots=file:///alice", callText(ctx, t, cs, params))
	got.await(t, 1, 2)
	logs, progress := got.snapshot()
	assert.Equal(t, []string{"L"}, logs)
	assert.Equal(t, []string{"tok 1/2 L", "tok 2/2 L"}, progress)
}

// TestRelayMissingCapability: a client that declared no sampling,
// elicitation or roots is not asked; an upstream that asks anyway gets
// the error such a client answers, at once.
func TestRelayMissingCapability(t *testing.T) {
	t.Parallel()
	f := newRelayFront(t, memoryConfig("up"))
	ct, st := mcp.NewInMemoryTransports()
	ss, err := f.server.Connect(t.Context(), st, nil)
	require.NoError(t, err)
	f.mu.Lock()
	f.caller[ss] = &toolcall.Caller{Subject: "carl"}
	f.mu.Unlock()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bare"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}).Connect(t.Context(), ct, &mcp.ClientSessionOptions{ProtocolVersion: legacyRevision})
	require.NoError(t, err)
	defer cs.Close()
	ctx, cancel := context.WithTimeout(t.Context(), failureBound)
	defer cancel()
	assert.Equal(t, "L sampled=none elicited=none roots=none",
		callText(ctx, t, cs, &mcp.CallToolParams{Name: "interact", Arguments: map[string]any{"label": "L"}}), "the upstream sees the client's capabilities")
	assert.Equal(t, "L sampled=error elicited=error roots=",
		callText(ctx, t, cs, &mcp.CallToolParams{Name: "interact", Arguments: map[string]any{"label": "L", "force": true}}), "asked anyway: refused (roots: the go-sdk client without the capability lists none), never waited on")
}

// TestRelayIsolation: two callers with calls in flight to the same
// upstream at once (each call's sampling request waits until the other's
// has arrived), many rounds: each answers its own sampling and
// elicitation requests and sees only its own progress and log messages.
func TestRelayIsolation(t *testing.T) {
	t.Parallel()
	httpUp, _ := httpConfig(t, "up")
	overEachTransport(t, httpUp, func(t *testing.T, _ string, f *relayFront) {
		var barrier *roundBarrier
		var bmu sync.Mutex
		wait := func(ctx context.Context) {
			bmu.Lock()
			b := barrier
			bmu.Unlock()
			b.arrive(ctx)
		}
		subjects := []string{"alice", "bob"}
		sessions := make([]*mcp.ClientSession, 2)
		logs := make([]*peerLog, 2)
		for i, s := range subjects {
			sessions[i], logs[i] = f.connect(s, wait)
		}
		const rounds = 25
		for r := range rounds {
			bmu.Lock()
			barrier = newRoundBarrier(2)
			bmu.Unlock()
			var wg sync.WaitGroup
			for i, s := range subjects {
				wg.Go(func() {
					label := fmt.Sprintf("%s-%d", s, r)
					params := &mcp.CallToolParams{Name: "interact", Arguments: map[string]any{"label": label}}
					params.SetProgressToken(label)
					ctx, cancel := context.WithTimeout(t.Context(), failureBound)
					defer cancel()
					res, err := sessions[i].CallTool(ctx, params)
					if !assert.NoError(t, err) || !assert.Len(t, res.Content, 1) {
						return
					}
					want := fmt.Sprintf("%s sampled=%s:%s elicited=accept:%s:%s roots=file:///%s", label, s, label, s, label, s)
					assert.Equal(t, want, res.Content[0].(*mcp.TextContent).Text)
				})
			}
			wg.Wait()
			if t.Failed() {
				return
			}
		}
		for i, s := range subjects {
			logs[i].await(t, rounds, 2*rounds)
			got, progress := logs[i].snapshot()
			require.Len(t, got, rounds, "%s: one log message per call", s)
			require.Len(t, progress, 2*rounds, "%s: two progress notifications per call", s)
			for _, m := range append(got, progress...) {
				require.True(t, strings.HasPrefix(m, s+"-"), "%s received %q", s, m)
			}
		}
	})
}

// overEachTransport runs test in a parallel subtest per transport to the
// upstream "up", named for it ("http" to httpUp, "stdio" to a process),
// each with a relay front of its own.
func overEachTransport(t *testing.T, httpUp Config, test func(t *testing.T, transport string, f *relayFront)) {
	for name, up := range map[string]Config{"http": httpUp, "stdio": stdioConfig("up")} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t, name, newRelayFront(t, up))
		})
	}
}

// roundBarrier lets n sampling requests through once all n arrived.
type roundBarrier struct {
	mu   sync.Mutex
	n    int
	open chan struct{}
}

func newRoundBarrier(n int) *roundBarrier { return &roundBarrier{n: n, open: make(chan struct{})} }

func (b *roundBarrier) arrive(ctx context.Context) {
	b.mu.Lock()
	b.n--
	if b.n == 0 {
		close(b.open)
	}
	b.mu.Unlock()
	select {
	case <-b.open:
	case <-ctx.Done():
	}
}

// TestRelayCancel: the client's notifications/cancelled for a call
// cancels it upstream; so does the end of the client's session.
func TestRelayCancel(t *testing.T) {
	t.Parallel()
	started := make(chan int, 4)
	cancelled := make(chan int, 4)
	srv := testserver.New(testserver.Options{
		SlowStarted:   func(ms int) { started <- ms },
		SlowCancelled: func(ms int) { cancelled <- ms },
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	f := newRelayFront(t, Config{Name: "up", URL: ts.URL, Timeout: time.Hour})

	cs, _ := f.connect("alice", nil)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"ms": 3_600_000}})
		done <- err
	}()
	require.Equal(t, 3_600_000, recvBounded(t, started))
	cancel() // the go-sdk client sends notifications/cancelled
	require.Equal(t, 3_600_000, recvBounded(t, cancelled), "cancelled upstream")
	require.Error(t, recvBounded(t, done))

	// A client that goes away: its call is cancelled upstream.
	cs2, _ := f.connect("bob", nil)
	go func() {
		_, err := cs2.CallTool(t.Context(), &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"ms": 3_600_001}})
		done <- err
	}()
	require.Equal(t, 3_600_001, recvBounded(t, started))
	// The client's transport breaks (a graceful close would wait for the
	// call): the front's session ends.
	require.NoError(t, f.conns["bob"].Close())
	require.Equal(t, 3_600_001, recvBounded(t, cancelled), "a call whose client is gone is cancelled upstream")
}

func recvBounded[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(failureBound):
		t.Fatal("no event within the failure bound")
	}
	panic("unreachable")
}

// TestRelaySessionBounds: idle caller sessions past MaxIdleCallerSessions
// are closed, least recently used first; a session in use never is.
func TestRelaySessionBounds(t *testing.T) {
	t.Parallel()
	p, err := NewPool([]Config{memoryConfig("up")}, &Options{MaxCallerSessions: 3, MaxIdleCallerSessions: 1})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	f := newRelayFrontPool(t, p)
	c := p.conns["up"]
	for i := range 3 {
		cs, _ := f.connect(fmt.Sprint("caller", i), nil)
		assert.Contains(t, callText(t.Context(), t, cs, &mcp.CallToolParams{Name: "interact", Arguments: map[string]any{"label": fmt.Sprint(i)}}), fmt.Sprint(i))
		c.relay.mu.Lock()
		idle, open := len(c.relay.idle), c.relay.open
		owner := c.relay.idle[0].key.owner
		c.relay.mu.Unlock()
		assert.Equal(t, 1, idle, "one idle session kept")
		assert.Equal(t, 1, open, "the others closed")
		assert.Equal(t, fmt.Sprint("caller:caller", i), owner, "the most recently used kept")
	}
}

// FuzzProgressToken: whatever JSON a client sends as its progressToken and
// an upstream echoes, comparing them never panics, and a token matches
// itself only when the relay keeps it (a string or a number).
func FuzzProgressToken(f *testing.F) {
	for _, s := range []string{`"a"`, `1`, `1.5`, `{"a":1}`, `[1]`, `null`, `true`} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, sent, got string) {
		var a, b any
		if json.Unmarshal([]byte(sent), &a) != nil || json.Unmarshal([]byte(got), &b) != nil {
			return
		}
		tok := progressToken(a)
		_ = tok != nil && sameToken(tok, b)
		if tok != nil && !sameToken(tok, a) {
			t.Fatalf("token %v does not match itself", a)
		}
	})
}
