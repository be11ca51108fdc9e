package engine_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/internal/testkit/proctest"
	"github.com/toolgate/toolgate/watch"
)

// Grant policies for carol (admin), whose base decision is
// [echo getReward report execUrl].
const (
	grantEcho      = "package toolgate.grant\n\ngranted := {\"echo\"}\n"
	grantGetReward = "package toolgate.grant\n\ngranted := {\"getReward\"}\n"
	hideReport     = "package toolgate.grant\n\ngranted := {t.name | some t in input.tools; t.base; t.name != \"report\"}\n"
	hideReport2    = "package toolgate.grant\n\n# v2\ngranted := {t.name | some t in input.tools; t.base; not t.name in {\"report\", \"execUrl\"}}\n"
)

var (
	onlyEcho      = []string{"echo"}
	onlyGetReward = []string{"getReward"}
	allButReport  = []string{"echo", "getReward", "execUrl"}
	allButReport2 = []string{"echo", "getReward"}
	carolBase     = []string{"echo", "getReward", "report", "execUrl"}
)

// failureBound bounds a wait only so that a hang fails the test instead of
// the whole run: nothing waits on it to synchronise.
const failureBound = time.Minute

// watchFixture is a registry and a policy directory on disk, an engine on
// them and a running Watch.
type watchFixture struct {
	t        *testing.T
	dir      string
	registry string
	policies string
	e        *engine.Engine
	logs     *proctest.Buffer

	mu        sync.Mutex
	installed []*engine.Revision // every revision OnReload saw, in order
	errs      []error
	// reloaded receives (without blocking: one pending is enough) after
	// every swap OnReload saw.
	reloaded chan struct{}
}

// newWatchFixture writes testRegistry and the given policy files (paths
// relative to the policy directory); start runs the engine on them.
func newWatchFixture(t *testing.T, policies map[string]string) *watchFixture {
	t.Helper()
	dir := t.TempDir()
	f := &watchFixture{t: t, dir: dir, registry: filepath.Join(dir, "registry.yaml"), policies: filepath.Join(dir, "policies"), logs: &proctest.Buffer{},
		reloaded: make(chan struct{}, 1)}
	require.NoError(t, os.Mkdir(f.policies, 0o755))
	f.write(f.registry, testRegistry)
	for name, src := range policies {
		f.write(f.pol(name), src)
	}
	return f
}

func (f *watchFixture) pol(name string) string {
	return filepath.Join(f.policies, filepath.FromSlash(name))
}

func (f *watchFixture) write(path, content string) {
	f.t.Helper()
	require.NoError(f.t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(f.t, os.WriteFile(path, []byte(content), 0o644))
}

// renameOver saves like most editors do: a temporary file renamed over.
func (f *watchFixture) renameOver(path, content string) {
	f.t.Helper()
	tmp := path + ".tmp~"
	f.write(tmp, content)
	require.NoError(f.t, os.Rename(tmp, path))
}

func (f *watchFixture) start(wo watch.Options, opts ...engine.Option) *watchFixture {
	f.t.Helper()
	logger := slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e, err := engine.New(context.Background(), engine.Source{Registry: f.registry, Policies: f.policies}, append([]engine.Option{engine.WithLogger(logger)}, opts...)...)
	require.NoError(f.t, err)
	f.e = e
	wo.OnReload = func(old, new *engine.Revision) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if n := len(f.installed); n > 0 && f.installed[n-1] != old {
			f.errs = append(f.errs, fmt.Errorf("OnReload(%v, %v) after %v", old, new, f.installed[n-1]))
		}
		f.installed = append(f.installed, new)
		select {
		case f.reloaded <- struct{}{}:
		default:
		}
	}
	wo.OnError = func(err error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.errs = append(f.errs, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- watch.Run(ctx, e, wo) }()
	f.t.Cleanup(func() {
		cancel()
		require.NoError(f.t, <-done)
	})
	return f
}

// granted is carol's granted set in the current revision; nil when the
// decision fails (it may run in require.Eventually's goroutine).
func (f *watchFixture) granted() []string {
	return f.e.Current().Grant(context.Background(), carol, listReq).Granted()
}

func (f *watchFixture) waitGranted(want []string) {
	f.t.Helper()
	require.Eventually(f.t, func() bool { return slices.Equal(f.granted(), want) }, failureBound, 2*time.Millisecond,
		"want %v, have %v (last error: %v)", want, f.granted(), f.e.LastError())
}

// waitNoticedGap waits until the watcher has noticed that a file of the
// serving revision is missing (it logs that it waits for the settle
// window): the event to write the file back on, instead of a sleep.
func (f *watchFixture) waitNoticedGap() {
	f.t.Helper()
	require.Eventually(f.t, func() bool { return f.logs.Count("waiting for the settle window") > 0 }, failureBound, time.Millisecond,
		"the missing file was never noticed")
}

// decideAlongside starts readers goroutines that ask the current revision
// for carol's tool list over and over, handing each answer to judge, until
// the stop it returns is called; stop returns once they have stopped.
func (f *watchFixture) decideAlongside(readers int, judge func(d *engine.GrantDecision)) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range readers {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				judge(f.e.Current().Grant(context.Background(), carol, listReq))
				runtime.Gosched() // let the writer and the watcher run too
			}
		})
	}
	return func() { close(done); wg.Wait() }
}

func (f *watchFixture) revisions() []*engine.Revision {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.installed)
}

func (f *watchFixture) reloadErrors() []error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.errs)
}

// requireEveryRevisionHas checks that no installed revision lacked file.
// OnReload runs just after the swap: it first waits for the call of the
// current revision.
func (f *watchFixture) requireEveryRevisionHas(file string) {
	f.t.Helper()
	require.Eventually(f.t, func() bool {
		revs := f.revisions()
		return len(revs) > 0 && revs[len(revs)-1] == f.e.Current()
	}, failureBound, time.Millisecond)
	for _, r := range f.revisions() {
		require.Contains(f.t, r.PolicyFiles(), file, "revision %v", r)
	}
}

func TestWatchInPlaceWrite(t *testing.T) {
	t.Parallel()
	f := newWatchFixture(t, map[string]string{"grant.rego": grantEcho}).start(watch.Options{})
	require.Equal(t, onlyEcho, f.granted())
	f.write(f.pol("grant.rego"), grantGetReward)
	f.waitGranted(onlyGetReward)
	require.Equal(t, uint64(2), f.e.Current().Number())
	st := f.e.Status()
	require.Equal(t, uint64(1), st.Reloads)
	require.Equal(t, f.e.Current().Hash(), st.Hash)
	require.Empty(t, st.LastError)
}

func TestWatchRenameOnSave(t *testing.T) {
	t.Parallel()
	f := newWatchFixture(t, map[string]string{"grant.rego": grantEcho}).start(watch.Options{})
	f.renameOver(f.pol("grant.rego"), grantGetReward)
	f.waitGranted(onlyGetReward)
	f.renameOver(f.pol("grant.rego"), grantEcho)
	f.waitGranted(onlyEcho)
	f.requireEveryRevisionHas(f.pol("grant.rego"))
	require.Empty(t, f.reloadErrors())
}

// vim with backupcopy=no renames the file away, writes the new one a moment
// later and removes the backup. No decision in the gap may see a revision
// without the policy: here it would show the hidden tool.
func TestWatchVimSaveNeverServesTheGap(t *testing.T) {
	t.Parallel()
	f := newWatchFixture(t, map[string]string{"grant.rego": hideReport})
	// A short debounce, so that the gap is surely noticed inside it: the
	// settle window, not the debounce, must be what protects. A settle
	// window long enough for the test to write the file once the gap is
	// noticed, also on a loaded machine.
	f.start(watch.Options{Debounce: 5 * time.Millisecond, Settle: time.Second})
	require.Equal(t, allButReport, f.granted())

	var leaks, decisions atomic.Int64
	stop := f.decideAlongside(1, func(d *engine.GrantDecision) {
		if d.Err != nil || d.Visible("report") {
			leaks.Add(1)
		}
		decisions.Add(1)
	})

	p := f.pol("grant.rego")
	require.NoError(t, os.Rename(p, p+"~"))
	f.waitNoticedGap()
	f.write(p, hideReport2)
	require.NoError(t, os.Remove(p+"~"))
	f.waitGranted(allButReport2)
	stop()

	require.Zero(t, leaks.Load(), "a decision saw the hidden tool (of %d)", decisions.Load())
	require.Positive(t, decisions.Load())
	f.requireEveryRevisionHas(p)
	require.Equal(t, 1, f.logs.Count("waiting for the settle window"), "the gap was noticed, and settled")
	require.Empty(t, f.reloadErrors())
}

func TestWatchDeleteThenRecreate(t *testing.T) {
	t.Parallel()
	f := newWatchFixture(t, map[string]string{"grant.rego": hideReport}).start(watch.Options{Debounce: 5 * time.Millisecond, Settle: time.Second})
	p := f.pol("grant.rego")
	require.NoError(t, os.Remove(p))
	f.waitNoticedGap()
	f.write(p, hideReport2)
	f.waitGranted(allButReport2)
	f.requireEveryRevisionHas(p)
	require.Len(t, f.revisions(), 1)
}

func TestWatchRealDeletionAfterSettle(t *testing.T) {
	t.Parallel()
	const settle = 150 * time.Millisecond
	f := newWatchFixture(t, map[string]string{"grant.rego": hideReport, "other.rego": "package other\n\nx := 1\n"})
	f.start(watch.Options{Debounce: 5 * time.Millisecond, Settle: settle})
	deleted := time.Now()
	require.NoError(t, os.Remove(f.pol("grant.rego")))
	f.waitGranted(carolBase)
	took := time.Since(deleted)
	t.Logf("deletion took effect after %v (settle %v)", took, settle)
	require.GreaterOrEqual(t, took, settle, "a deletion is believed only after the settle window")
	require.Equal(t, []string{f.pol("other.rego")}, f.e.Current().PolicyFiles())
	require.Empty(t, f.reloadErrors())
}

func TestWatchNewSubdirectory(t *testing.T) {
	t.Parallel()
	f := newWatchFixture(t, nil).start(watch.Options{})
	require.Equal(t, carolBase, f.granted())
	require.NoError(t, os.MkdirAll(f.pol("team/nested"), 0o755))
	f.write(f.pol("team/nested/grant.rego"), grantEcho)
	f.waitGranted(onlyEcho)
	// The new directories are watched now: an in-place edit inside is seen.
	f.write(f.pol("team/nested/grant.rego"), grantGetReward)
	f.waitGranted(onlyGetReward)
}

// A Kubernetes ConfigMap volume: files are links through "..data" into a
// timestamped dot-directory, and an update swaps "..data" atomically.
func TestWatchConfigMapSwap(t *testing.T) {
	t.Parallel()
	f := newWatchFixture(t, nil)
	version := func(name, content string) {
		f.write(f.pol(name+"/grant.rego"), content)
		f.write(f.pol(name+"/data.json"), `{"version": "`+name+`"}`)
	}
	version("..2026_a", grantEcho)
	require.NoError(t, os.Symlink("..2026_a", f.pol("..data")))
	require.NoError(t, os.Symlink("..data/grant.rego", f.pol("grant.rego")))
	require.NoError(t, os.Symlink("..data/data.json", f.pol("data.json")))
	f.start(watch.Options{})
	require.Equal(t, onlyEcho, f.granted())
	want := []string{f.pol("data.json"), f.pol("grant.rego")}
	require.Equal(t, want, f.e.Current().PolicyFiles(), "dot-directories are not loaded")

	swap := func(from, to, content string) {
		version(to, content)
		require.NoError(t, os.Symlink(to, f.pol("..data_tmp")))
		require.NoError(t, os.Rename(f.pol("..data_tmp"), f.pol("..data")))
		require.NoError(t, os.RemoveAll(f.pol(from)))
	}
	swap("..2026_a", "..2026_b", grantGetReward)
	f.waitGranted(onlyGetReward)
	swap("..2026_b", "..2026_c", grantEcho)
	f.waitGranted(onlyEcho)

	require.Equal(t, want, f.e.Current().PolicyFiles())
	require.Empty(t, f.reloadErrors(), "no duplicate package, no rule conflict")
	require.Empty(t, f.e.Status().LastError)
}

func TestWatchSyntaxErrorKeepsLastGood(t *testing.T) {
	t.Parallel()
	f := newWatchFixture(t, map[string]string{"grant.rego": grantEcho}).start(watch.Options{Debounce: 20 * time.Millisecond})
	good := f.e.Current()
	const broken = "package toolgate.grant\n\ngranted := {\"getReward\"\n"
	// Atomic saves here: a torn in-place write could fail with another error.
	f.renameOver(f.pol("grant.rego"), broken)
	require.Eventually(t, func() bool { return f.e.LastError() != nil }, failureBound, 2*time.Millisecond)
	var ce *engine.CompileError
	require.ErrorAs(t, f.e.LastError(), &ce)
	require.Equal(t, f.pol("grant.rego"), ce.Diagnostics[0].File)
	require.Same(t, good, f.e.Current(), "the last good revision keeps serving")
	require.Equal(t, onlyEcho, f.granted())
	st := f.e.Status()
	require.Contains(t, st.LastError, "grant.rego")
	require.False(t, st.LastErrorAt.IsZero())
	require.Equal(t, uint64(1), st.Revision)

	// The same error again is reported, but logged once.
	f.renameOver(f.pol("grant.rego"), broken)
	require.Eventually(t, func() bool { return len(f.reloadErrors()) >= 2 }, failureBound, 2*time.Millisecond)
	require.Equal(t, 1, f.logs.Count("reload failed"))
	require.Equal(t, uint64(len(f.reloadErrors())), f.e.Status().ReloadFailures)

	f.renameOver(f.pol("grant.rego"), grantGetReward)
	f.waitGranted(onlyGetReward)
	require.NoError(t, f.e.LastError())
	st = f.e.Status()
	require.Empty(t, st.LastError)
	require.Equal(t, uint64(2), st.Revision)
}

func TestWatchRegistrySchemaError(t *testing.T) {
	t.Parallel()
	f := newWatchFixture(t, nil).start(watch.Options{})
	good := f.e.Current()
	f.renameOver(f.registry, "tools:\n  - { name: echo, method: demo.echo, arguments: [{ name: text, type: nosuchtype }] }\n")
	require.Eventually(t, func() bool { return f.e.LastError() != nil }, failureBound, 2*time.Millisecond)
	require.Contains(t, f.e.Status().LastError, "tools[0] (echo)")
	require.Same(t, good, f.e.Current())

	f.renameOver(f.registry, testRegistry+"  - { name: extra, method: demo.echo }\n")
	f.waitGranted(append(slices.Clone(carolBase), "extra"))
	require.NoError(t, f.e.LastError())
}

func TestWatchRegistryMissing(t *testing.T) {
	t.Parallel()
	f := newWatchFixture(t, nil).start(watch.Options{Debounce: 5 * time.Millisecond, Settle: 50 * time.Millisecond})
	good := f.e.Current()
	require.NoError(t, os.Remove(f.registry))
	require.Eventually(t, func() bool { return f.e.LastError() != nil }, failureBound, 2*time.Millisecond)
	require.ErrorIs(t, f.e.LastError(), os.ErrNotExist)
	require.Same(t, good, f.e.Current(), "a missing registry keeps the last good revision")
	f.write(f.registry, testRegistry)
	require.Eventually(t, func() bool { return f.e.LastError() == nil }, failureBound, 2*time.Millisecond)
	require.Same(t, good, f.e.Current(), "the same content: no new revision")
}

func TestReloadWaitsForTheSettleWindow(t *testing.T) {
	t.Parallel()
	// Two engines on the same files: one whose window (an hour) the
	// context cancels, whatever the machine's speed, and one whose window
	// (80 ms) a reload waits out.
	const settle = 80 * time.Millisecond
	f := newWatchFixture(t, map[string]string{"grant.rego": grantEcho})
	src := engine.Source{Registry: f.registry, Policies: f.policies}
	long, err := engine.New(context.Background(), src, engine.WithSettle(time.Hour))
	require.NoError(t, err)
	e, err := engine.New(context.Background(), src, engine.WithSettle(settle))
	require.NoError(t, err)
	require.NoError(t, os.Remove(f.pol("grant.rego")))

	ctx, cancel := context.WithTimeout(context.Background(), settle/4)
	defer cancel()
	changed, err := long.Reload(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.False(t, changed)
	require.Equal(t, uint64(1), long.Current().Number(), "nothing built in the window")
	require.NoError(t, long.LastError(), "a cancelled wait is no reload failure")

	noticed := time.Now()
	changed, err = e.Reload(context.Background())
	require.NoError(t, err)
	require.True(t, changed)
	require.Empty(t, e.Current().PolicyFiles())
	require.GreaterOrEqual(t, time.Since(noticed), settle)
}

func TestWatchNeedsFiles(t *testing.T) {
	t.Parallel()
	e := newEngine(t, nil)
	require.ErrorIs(t, watch.Run(context.Background(), e, watch.Options{}), watch.ErrNotWatchable)
}

// TestWatchLatency measures edit-to-effect latency over in-place writes and
// renames. It is reported, not asserted beyond a sanity bound (the goal is
// p99 < 500 ms with the default debounce).
func TestWatchLatency(t *testing.T) {
	f := newWatchFixture(t, map[string]string{"grant.rego": grantEcho}).start(watch.Options{})
	const edits = 20
	var lat []time.Duration
	for i := range edits {
		content, want := grantGetReward, onlyGetReward
		if i%2 == 1 {
			content, want = grantEcho, onlyEcho
		}
		start := time.Now()
		if i%4 < 2 {
			f.write(f.pol("grant.rego"), content)
		} else {
			f.renameOver(f.pol("grant.rego"), content)
		}
		// Each swap is an event; the latency is the first one that serves
		// the edit.
		for !slices.Equal(f.granted(), want) {
			select {
			case <-f.reloaded:
			case <-time.After(failureBound):
				t.Fatalf("edit %d never took effect", i)
			}
		}
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	pct := func(p int) time.Duration { return lat[min(len(lat)-1, (len(lat)*p+99)/100-1)] }
	t.Logf("edit-to-effect latency over %d edits (debounce %v): p50 %v, p99 %v, min %v, max %v",
		edits, watch.DefaultDebounce, pct(50), pct(99), lat[0], lat[len(lat)-1])
	require.Equal(t, uint64(edits), f.e.Status().Reloads)
}

// TestReloadRace: readers decide while a writer flips the policy between
// two versions. Every decision must be exactly one version's answer.
func TestReloadRace(t *testing.T) {
	// The evaluation deadline is generous: on a loaded machine under -race,
	// eight spinning readers starve each other, which is not a policy failure.
	f := newWatchFixture(t, map[string]string{"grant.rego": grantEcho}).
		start(watch.Options{Debounce: 2 * time.Millisecond}, engine.WithTimeout(10*time.Second))
	// An odd number of rewrites: the last content differs from the first, so
	// at least one reload installs it (files that keep changing are loaded
	// only once they have settled, docs/contract.md §9).
	const readers, rewrites = 8, 201
	var decisions, failures, mixes atomic.Int64
	var firstBad atomic.Value
	stop := f.decideAlongside(readers, func(d *engine.GrantDecision) {
		decisions.Add(1)
		switch g := d.Granted(); {
		case d.Err != nil:
			failures.Add(1)
			firstBad.CompareAndSwap(nil, d.Err.Error())
		case !slices.Equal(g, onlyEcho) && !slices.Equal(g, onlyGetReward):
			mixes.Add(1)
			firstBad.CompareAndSwap(nil, fmt.Sprint(g))
		}
	})
	last := onlyEcho
	for i := range rewrites {
		content := grantEcho
		last = onlyEcho
		if i%2 == 0 {
			content, last = grantGetReward, onlyGetReward
		}
		f.write(f.pol("grant.rego"), content)
		// The next rewrite waits until a reader has decided since this
		// one: reads and writes interleave, whatever the machine's speed.
		for n := decisions.Load(); decisions.Load() == n; {
			runtime.Gosched()
		}
	}
	f.waitGranted(last)
	require.Eventually(t, func() bool { return f.e.LastError() == nil }, failureBound, 2*time.Millisecond)
	stop()

	st := f.e.Status()
	t.Logf("%d decisions during %d rewrites; %d revisions installed, %d reloads failed (torn in-place writes)",
		decisions.Load(), rewrites, st.Reloads, st.ReloadFailures)
	require.Zero(t, failures.Load(), "first: %v", firstBad.Load())
	require.Zero(t, mixes.Load(), "first: %v", firstBad.Load())
	require.Positive(t, st.Reloads)
}
