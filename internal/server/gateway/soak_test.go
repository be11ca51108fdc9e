package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/toolcall"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/server/gateway"
)

// The soak policy flips between two revisions every 500 ms: each hides a
// different tool from soak callers and denies count with its own reason.
const soakPolicy = `package toolgate.soak

# Revision %[1]s.
hidden := %[2]q

reason := "Denied by revision %[1]s."
`

const soakGrant = `package toolgate.grant

granted := {t.name | some t in input.tools; t.base; t.name != data.toolgate.soak.hidden} if "soak" in input.caller.roles
`

const soakCall = `package toolgate.call

deny contains data.toolgate.soak.reason if {
	"soak" in input.caller.roles
	input.tool.name == "count"
}
`

// soakCall is one kind of call the clients make, with every answer it may
// get under either policy revision.
type soakCase struct {
	name string
	args map[string]any
	ok   []string
}

var soakCases = []soakCase{
	{"echo", map[string]any{"text": "hi"}, []string{"hi"}},
	{"add", map[string]any{"a": 2, "b": 3}, []string{"5"}},
	{"price", map[string]any{"price": map[string]any{"amount": "1.5", "currency": "EUR"}}, []string{"1.50 EUR"}},
	{"execUrl", map[string]any{"url": "x"}, []string{"Error: Unknown tool 'execUrl'."}},           // hidden by the base decision
	{"resetCounter", map[string]any{"key": "k"}, []string{"Error: Unknown tool 'resetCounter'."}}, // hidden by the base decision
	{"noSuchTool", map[string]any{"a": 1}, []string{"Error: Unknown tool 'noSuchTool'."}},         // absent
	{"add", map[string]any{"a": "two", "b": 3}, []string{"Error: Invalid value for argument 'a': expected int."}},
	{"echo", map[string]any{}, []string{"Error: Missing required argument 'text'."}},
	{"count", map[string]any{"key": "k"}, []string{"Denied by revision A.", "Denied by revision B."}},
	{"inner", map[string]any{"idReward": 1}, []string{"Error: Unknown tool 'inner'.", "Error: An internal error occurred while executing the tool."}},
	{"fail", map[string]any{}, []string{"Error: Unknown tool 'fail'.", "Error: An internal error occurred while executing the tool."}},
}

// TestSoak drives gateway.Run over HTTP on loopback with concurrent go-sdk
// clients (every protocol revision) while the policy flips between two
// revisions every 500 ms, then checks: no error (a JSON-RPC or transport
// error, or an answer neither revision gives), no goroutine left after
// shutdown, and reports calls/s, latency, reloads and heap.
//
// It runs 3 s in `go test`; the real run:
//
//	TOOLGATE_SOAK_DURATION=60s go test ./internal/server/gateway -run TestSoak -v
func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("soak: skipped with -short")
	}
	duration := 3 * time.Second
	if d := os.Getenv("TOOLGATE_SOAK_DURATION"); d != "" {
		var err error
		duration, err = time.ParseDuration(d)
		require.NoError(t, err, "TOOLGATE_SOAK_DURATION")
	}
	const clients = 16
	// Not parallel: the goroutine and heap numbers are this test's own.
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	goroutinesBefore := runtime.NumGoroutine()

	dir := t.TempDir()
	reg := filepath.Join(dir, "registry.yaml")
	require.NoError(t, os.WriteFile(reg, toolgate.ExampleRegistry(), 0o644))
	pol := filepath.Join(dir, "rego")
	require.NoError(t, os.CopyFS(pol, toolgate.ExamplePolicies()))
	// The soak grant replaces the example's contractor override.
	require.NoError(t, os.WriteFile(filepath.Join(pol, "grant.rego"), []byte(soakGrant), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(pol, "soak_call.rego"), []byte(soakCall), 0o644))
	revision := func(v string) []byte {
		hidden := map[string]string{"A": "inner", "B": "fail"}[v]
		return fmt.Appendf(nil, soakPolicy, v, hidden)
	}
	writePolicy := func(v string) error {
		// Atomic save, as editors do: a dot file (never loaded), renamed.
		tmp := filepath.Join(pol, ".soak.rego.tmp")
		if err := os.WriteFile(tmp, revision(v), 0o644); err != nil {
			return err
		}
		return os.Rename(tmp, filepath.Join(pol, "soak.rego"))
	}
	require.NoError(t, writePolicy("A"))

	caller := &toolcall.Caller{Subject: "soak", Roles: []string{"manager", "soak"}}
	operator := &toolcall.Caller{Subject: "operator", Roles: []string{"admin"}}
	tokens := writeTokens(t, dir, caller, operator)
	auditPath := filepath.Join(dir, "audit.jsonl")
	watch := true
	g := startGateway(t, gateway.Config{
		// Generous deadlines: the soak checks answers, and on a loaded
		// machine (CI under -race) a 250 ms evaluation deadline would turn a
		// call into a correct but unexpected failure.
		Serve: config.Serve{Registry: reg, Policy: pol, Tokens: tokens, Ledger: "memory", Audit: auditPath, Watch: &watch,
			EvalTimeout: 30 * time.Second, HookTimeout: 30 * time.Second},
		Stderr: io.Discard,
	})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sessions := make([]*mcp.ClientSession, clients)
	for i := range sessions {
		sessions[i] = connect(t, ctx, g.url, protocols[i%len(protocols)], caller)
	}

	// Flip the policy every 500 ms until the clients are done: longer than
	// the debounce and the settle window together (docs/contract.md §9), since a file
	// that keeps changing is loaded only once it has stayed the same that
	// long.
	var flips atomic.Int64
	var wg sync.WaitGroup
	flipDone := make(chan struct{})
	wg.Go(func() {
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for v := "B"; ; v = map[string]string{"A": "B", "B": "A"}[v] {
			select {
			case <-flipDone:
				return
			case <-tick.C:
			}
			if err := writePolicy(v); err != nil {
				t.Errorf("rewriting the policy: %v", err)
				return
			}
			flips.Add(1)
		}
	})

	var (
		mu        sync.Mutex
		latencies []time.Duration
		errs      []string
		heapMid   uint64
	)
	var heap0 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&heap0)
	start := time.Now()
	deadline := start.Add(duration)
	var clientsWG sync.WaitGroup
	for i, cs := range sessions {
		clientsWG.Go(func() {
			var own []time.Duration
			var ownErrs []string
			for n := i; time.Now().Before(deadline); n++ {
				c := soakCases[n%len(soakCases)]
				t0 := time.Now()
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.name, Arguments: c.args})
				own = append(own, time.Since(t0))
				switch {
				case err != nil:
					ownErrs = append(ownErrs, fmt.Sprintf("%s: %v", c.name, err))
				case len(res.Content) != 1:
					ownErrs = append(ownErrs, fmt.Sprintf("%s: %d content items", c.name, len(res.Content)))
				default:
					tc, _ := res.Content[0].(*mcp.TextContent)
					if tc == nil || !slices.Contains(c.ok, tc.Text) {
						ownErrs = append(ownErrs, fmt.Sprintf("%s: unexpected answer %+v", c.name, res.Content[0]))
					}
				}
			}
			mu.Lock()
			latencies = append(latencies, own...)
			errs = append(errs, ownErrs...)
			mu.Unlock()
		})
	}
	// Heap mid-run, once the server is warm. The sleep paces a
	// measurement; nothing is synchronised by it.
	time.Sleep(min(duration/2, 5*time.Second))
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	heapMid = ms.HeapAlloc
	clientsWG.Wait()
	elapsed := time.Since(start)
	runtime.GC()
	runtime.ReadMemStats(&ms)
	heapEnd := ms.HeapAlloc
	close(flipDone)
	wg.Wait()

	// The last rewrite is loaded once it has settled: wait for a reload
	// (an event; the deadline is only a failure bound), so a machine too
	// loaded to settle any rewrite during a short soak still checks one.
	// An even number of flips ends on revision A, the one served at start:
	// on a machine too loaded for any rewrite to settle, that would load
	// nothing new, so end on B.
	if flips.Load()%2 == 0 {
		require.NoError(t, writePolicy("B"))
		flips.Add(1)
	}
	healthURL := strings.TrimSuffix(g.url, "/mcp") + "/healthz?verbose=1"
	health := fetchHealth(t, healthURL, tokenFor(operator))
	for deadline := time.Now().Add(time.Minute); health.Reloads == 0 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		health = fetchHealth(t, healthURL, tokenFor(operator))
	}
	for _, cs := range sessions {
		require.NoError(t, cs.Close())
	}
	require.NoError(t, g.stop(), "graceful shutdown")
	audit, err := os.ReadFile(auditPath)
	require.NoError(t, err)
	auditLines := strings.Count(string(audit), "\n")

	// Goroutines after shutdown: back to where they were. Nothing signals
	// the last one's exit, so poll, with a minute as a failure bound only
	// (goleak's own retries, deferred above, last about 2 s: by then this
	// has waited).
	var goroutinesAfter int
	for deadline := time.Now().Add(time.Minute); ; {
		goroutinesAfter = runtime.NumGoroutine()
		if goroutinesAfter <= goroutinesBefore || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}

	slices.Sort(latencies)
	pct := func(p float64) time.Duration {
		if len(latencies) == 0 {
			return 0
		}
		return latencies[min(len(latencies)-1, int(float64(len(latencies))*p))]
	}
	mb := func(b uint64) float64 { return float64(b) / (1 << 20) }
	t.Logf("soak: %s, %d clients (revisions %s), policy rewritten every 500 ms", elapsed.Round(time.Millisecond), clients, strings.Join(protocols, ", "))
	t.Logf("| calls | calls/s | p50 | p99 | max | errors | policy writes | reloads | goroutines before/after | heap start/mid/end (MiB) |")
	t.Logf("| %d | %.0f | %s | %s | %s | %d | %d | %d | %d/%d | %.1f/%.1f/%.1f |",
		len(latencies), float64(len(latencies))/elapsed.Seconds(),
		pct(0.50).Round(10*time.Microsecond), pct(0.99).Round(10*time.Microsecond), pct(1).Round(10*time.Microsecond),
		len(errs), flips.Load(), health.Reloads, goroutinesBefore, goroutinesAfter,
		mb(heap0.HeapAlloc), mb(heapMid), mb(heapEnd))
	t.Logf("audit records: %d (calls that reached step 5); reload failures: %d", auditLines, health.ReloadFailure)

	require.Empty(t, errs, "errors (first ones): %v", errs[:min(len(errs), 5)])
	require.NotEmpty(t, latencies)
	require.Positive(t, health.Reloads, "the policy reloaded during the soak")
	require.Zero(t, health.ReloadFailure, "every rewrite compiles")
	require.LessOrEqual(t, goroutinesAfter, goroutinesBefore, "goroutines after shutdown")
}

func fetchHealth(t *testing.T, url, token string) gateway.Health {
	t.Helper()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := (&http.Client{Transport: tr}).Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	defer resp.Body.Close()
	var h gateway.Health
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&h))
	return h
}
