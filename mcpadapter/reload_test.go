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

	"github.com/toolgate/toolgate/demo"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/mcpadapter"
)

// Two policy versions: A grants echo only, B grants add only (to everyone).
const (
	policyA = "package toolgate.grant\n\ngranted := {\"echo\"}\n"
	policyB = "package toolgate.grant\n\ngranted := {\"add\"}\n"
)

// watched is a governed server over files in a temp dir, with Watch on.
func watched(t *testing.T, caller *engine.Caller) (*engine.Engine, *mcpadapter.Adapter, *mcp.Server, string) {
	t.Helper()
	src := writeExample(t, t.TempDir(), setup{policies: map[string]string{"grant.rego": policyA}})
	eng, err := engine.New(context.Background(), src, engine.WithTimeout(10*time.Second))
	require.NoError(t, err)
	a := mcpadapter.New(mcpadapter.Options{Revisions: eng, Methods: demo.Methods(), Caller: mcpadapter.StaticCaller(caller)})
	s := a.NewServer(&mcp.Implementation{Name: "toolgate", Version: "test"}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		_ = eng.Watch(ctx, engine.WatchOptions{
			Debounce: 5 * time.Millisecond,
			OnReload: func(old, next *engine.Revision) {
				go func() {
					if a.ListingChanged(ctx, old, next) {
						a.NotifyToolsChanged(s)
					}
				}()
			},
		})
	}()
	return eng, a, s, filepath.Join(src.Policies, "grant.rego")
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
// is rewritten 200 times between two versions. No call fails, and every
// answer is one of the two revisions' answers: under A echo runs and add is
// unknown; under B the reverse. A call never mixes them.
func TestReloadRace(t *testing.T) {
	t.Parallel()
	caller := &engine.Caller{Subject: "max", Roles: []string{"manager"}}
	eng, _, s, grantPath := watched(t, caller)

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
	for i := range 200 {
		p := policyA
		if i%2 == 0 {
			p = policyB
		}
		writeAtomically(t, grantPath, p)
		time.Sleep(2 * time.Millisecond)
	}
	writeAtomically(t, grantPath, policyB)
	require.Eventually(t, func() bool {
		d := eng.Current().Grant(context.Background(), caller, engine.Request{Method: engine.MethodList})
		return len(d.Granted()) == 1 && d.Granted()[0] == "add"
	}, 5*time.Second, 10*time.Millisecond)
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
	caller := &engine.Caller{Subject: "max", Roles: []string{"manager"}}
	eng, _, s, grantPath := watched(t, caller)
	changed := make(chan struct{}, 16)
	g := &governed{server: s}
	cs := g.connectSDK(t, proto20251125, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	res, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	require.Equal(t, []string{"echo"}, toolNames(res))

	// A reload that changes nothing this caller sees: no notification.
	rev := eng.Current().Number()
	writeAtomically(t, grantPath, policyA+"\n# a comment changes the hash, not the listing\n")
	require.Eventually(t, func() bool { return eng.Current().Number() > rev }, 5*time.Second, 5*time.Millisecond)
	select {
	case <-changed:
		t.Fatal("list_changed after a reload that changed no listing")
	case <-time.After(200 * time.Millisecond):
	}

	writeAtomically(t, grantPath, policyB)
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("no notifications/tools/list_changed after a reload that changed the listing")
	}
	res, err = cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	require.Equal(t, []string{"add"}, toolNames(res))
}
