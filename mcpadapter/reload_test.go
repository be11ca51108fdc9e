package mcpadapter_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/example/demo"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/toolcall"
	"github.com/toolgate/toolgate/watch"
)

// Two policy versions: A grants echo only, B grants add only (to everyone).
const (
	policyA = "package toolgate.grant\n\ngranted := {\"echo\"}\n"
	policyB = "package toolgate.grant\n\ngranted := {\"add\"}\n"
)

// watched is a governed server over files in a temp dir, with Watch on.
func watched(t *testing.T, caller *toolcall.Caller) (*engine.Engine, *mcpadapter.Adapter, *mcp.Server, string, <-chan reloaded) {
	t.Helper()
	src := writeExample(t, t.TempDir(), setup{policies: map[string]string{"grant.rego": policyA}})
	eng, err := engine.New(context.Background(), src, engine.WithTimeout(10*time.Second))
	require.NoError(t, err)
	a := mcpadapter.New(mcpadapter.Options{Revisions: eng, Methods: demo.Methods(), Caller: mcpadapter.StaticCaller(caller)})
	s := a.NewServer(&mcp.Implementation{Name: "toolgate", Version: "test"}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	handled := make(chan reloaded, 4096)
	go func() {
		defer close(done)
		_ = watch.Run(ctx, eng, watch.Options{
			Debounce: 5 * time.Millisecond,
			// The settle window has its own tests in engine; here it
			// only slows the reloads down.
			Settle: time.Millisecond,
			OnReload: func(old, next *engine.Revision) {
				go func() {
					ev := reloaded{number: next.Number(), notified: a.ListingChanged(ctx, old, next)}
					if ev.notified {
						a.NotifyToolsChanged(s)
					}
					select {
					case handled <- ev:
					default:
						t.Error("too many reloads for the test to follow")
					}
				}()
			},
		})
	}()
	return eng, a, s, filepath.Join(src.Policies, "grant.rego"), handled
}

// reloaded is what the server of watched did after a swap: the new
// revision's number, and whether it sent notifications/tools/list_changed.
type reloaded struct {
	number   uint64
	notified bool
}

// awaitReload waits until the server of watched has handled the swap to a
// revision after rev, and returns what it did for each swap on the way.
func awaitReload(t *testing.T, handled <-chan reloaded, rev uint64) []reloaded {
	t.Helper()
	var seen []reloaded
	for {
		select {
		case ev := <-handled:
			seen = append(seen, ev)
			if ev.number > rev {
				return seen
			}
		case <-time.After(time.Minute): // a failure bound only
			t.Fatalf("no reload after revision %d", rev)
		}
	}
}

// writeAtomically replaces path by rename, as editors and ConfigMaps do, so
// a reader never sees a half-written file.
func writeAtomically(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp-" + time.Now().Format("150405.000000000")
	require.NoError(t, os.WriteFile(tmp, []byte(content), 0o644))
	require.NoError(t, os.Rename(tmp, path))
}

// TestReloadRace: 8 goroutines call tools/call in a loop while the policy
// is rewritten 50 times between two versions, each rewrite served before
// the next. No call fails, and every answer is one of the two revisions'
// answers: under A echo runs and add is unknown; under B the reverse. A
// call never mixes them.
func TestReloadRace(t *testing.T) {
	t.Parallel()
	caller := &toolcall.Caller{Subject: "max", Roles: []string{"manager"}}
	eng, _, s, grantPath, handled := watched(t, caller)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var calls, sawA, sawB atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g := &governed{server: s}
			cs := g.connectSDK(t, proto20250618, nil)
			for ctx.Err() == nil {
				// One call per tool: each answer must be one revision's.
				echo, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
				if ctx.Err() != nil {
					return
				}
				if err != nil {
					errs <- "echo: " + err.Error()
					return
				}
				text := echo.Content[0].(*mcp.TextContent).Text
				switch {
				case text == "hi" && !echo.IsError:
					sawA.Add(1)
				case text == "Error: Unknown tool 'echo'." && echo.IsError:
					sawB.Add(1)
				default:
					errs <- "echo answered " + text
					return
				}
				calls.Add(1)
			}
		}()
	}
	// Each rewrite waits for its reload: 50 swaps under the calls.
	for i := range 50 {
		p := policyA
		if i%2 == 0 {
			p = policyB
		}
		rev := eng.Current().Number()
		writeAtomically(t, grantPath, p)
		awaitReload(t, handled, rev)
	}
	d := eng.Current().Grant(context.Background(), caller, engine.Request{Method: engine.MethodList})
	require.Equal(t, []string{"echo"}, d.Granted(), "the last rewrite (policy A) is served")
	cancel()
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	require.Positive(t, calls.Load())
	require.Zero(t, eng.Status().ReloadFailures, "atomic writes never fail a reload")
	t.Logf("%d calls across %d reloads (echo granted %d times, unknown %d times)", calls.Load(), eng.Status().Reloads, sawA.Load(), sawB.Load())
}

// TestListChangedAfterReload: a connected go-sdk client gets
// notifications/tools/list_changed after a reload that changes its listing,
// and not after one that does not.
func TestListChangedAfterReload(t *testing.T) {
	t.Parallel()
	caller := &toolcall.Caller{Subject: "max", Roles: []string{"manager"}}
	eng, _, s, grantPath, handled := watched(t, caller)
	changed := make(chan struct{}, 16)
	g := &governed{server: s}
	cs := g.connectSDK(t, proto20251125, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	res, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	require.Equal(t, []string{"echo"}, toolNames(res))

	// A reload that changes nothing this caller sees: no notification.
	// The server's decision is the event waited on; the SDK sends a
	// notification only when told to (after its own 10 ms delay).
	rev := eng.Current().Number()
	writeAtomically(t, grantPath, policyA+"\n# a comment changes the hash, not the listing\n")
	for _, ev := range awaitReload(t, handled, rev) {
		require.False(t, ev.notified, "list_changed after a reload that changed no listing")
	}
	require.Empty(t, changed)

	rev = eng.Current().Number()
	writeAtomically(t, grantPath, policyB)
	evs := awaitReload(t, handled, rev)
	require.True(t, evs[len(evs)-1].notified)
	select {
	case <-changed:
	case <-time.After(time.Minute): // a failure bound only
		t.Fatal("no notifications/tools/list_changed after a reload that changed the listing")
	}
	require.Empty(t, changed, "one notification for one reload")
	res, err = cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	require.Equal(t, []string{"add"}, toolNames(res))
}
