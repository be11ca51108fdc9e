package replicatest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/open-policy-agent/opa/v1/plugins/logs"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/testkit/bundletest"
	"github.com/toolgate/toolgate/internal/testkit/pgtest"
)

const (
	annToken = "replicatest-ann"
	beaToken = "replicatest-bea"
)

var held = regexp.MustCompile(`^Approval required: .* \(approval ([0-9a-f]{24})\)\. Call again once it is approved\.$`)

// TestReplicas: two toolgate processes from the built binary, one bundle
// server, one PostgreSQL.
func TestReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two toolgate processes and PostgreSQL; skipped with -short")
	}
	ledger := pgtest.Schema(t, "replicas")
	bin := buildBinary(t)
	key, otherKey := newSigner(t), newSigner(t)

	srv := bundletest.NewServer(signedBundle(t, "r1", key.private))
	hs := httptest.NewServer(srv)
	defer hs.Close()
	sink := &logSink{}
	hsink := httptest.NewServer(sink)
	defer hsink.Close()

	dir := t.TempDir()
	tokens := writeTokens(t, dir, "admin")
	cfg := filepath.Join(dir, "toolgate.yaml")
	require.NoError(t, os.WriteFile(cfg, fmt.Appendf(nil, `bundle:
  url: %s/bundles/toolgate.tar.gz
  polling: { min_delay_seconds: 1, max_delay_seconds: 1 }
  signing: { key_file: %s }
ledger: %s
tokens: %s
decisionLog: %s/logs
`, hs.URL, key.public, ledger, tokens, hsink.URL), 0o600))

	replicas := startReplicas(t, bin, dir, "--config", cfg)
	a, b := replicas[0], replicas[1]
	probe := func(t *testing.T, cs *mcp.ClientSession) string {
		t.Helper()
		ans := call(t, cs, "probe", nil, nil)
		require.False(t, ans.IsError, ans.Text)
		return ans.Text
	}
	sessions := map[*replica]*mcp.ClientSession{a: a.connect(t, annToken), b: b.connect(t, annToken)}
	for _, r := range replicas {
		require.Equal(t, "r1 r1", probe(t, sessions[r]), "replica %s", r.name)
		require.Equal(t, "r1", r.health(t, annToken).BundleRevision)
	}

	t.Run("a new bundle reaches both replicas, never mixed within a call", func(t *testing.T) {
		// Callers keep calling on both replicas while r2 rolls out: every
		// answer is one revision's (its data and its registry row agree).
		// A session that listed the probe tool is told its listing changed
		// (its inputSchema's default names the revision).
		changed := map[*replica]chan struct{}{}
		for _, r := range replicas {
			ch := make(chan struct{}, 1)
			changed[r] = ch
			cs := r.connectWith(t, annToken, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
				select {
				case ch <- struct{}{}:
				default:
				}
			}})
			_, err := cs.ListTools(t.Context(), nil)
			require.NoError(t, err)
		}
		var stop atomic.Bool
		var wg sync.WaitGroup
		var mu sync.Mutex
		seen := map[string]int{}
		for _, r := range replicas {
			cs := r.connect(t, annToken)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for !stop.Load() {
					res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "probe", Arguments: map[string]any{}})
					if err != nil || len(res.Content) != 1 {
						mu.Lock()
						seen[fmt.Sprintf("error %v", err)]++
						mu.Unlock()
						return
					}
					mu.Lock()
					seen[res.Content[0].(*mcp.TextContent).Text]++
					mu.Unlock()
				}
			}()
		}
		srv.Set(signedBundle(t, "r2", key.private))
		took := until(t, "both replicas serve r2", func() bool {
			return probe(t, sessions[a]) == "r2 r2" && probe(t, sessions[b]) == "r2 r2"
		})
		stop.Store(true)
		wg.Wait()
		t.Logf("both replicas served r2 %s after it was published (polling every 1 s)", took.Round(10e6))
		for _, r := range replicas {
			select {
			case <-changed[r]:
			case <-time.After(deadline):
				t.Fatalf("replica %s sent no notifications/tools/list_changed for r2", r.name)
			}
		}
		for text, n := range seen {
			require.Contains(t, []string{"r1 r1", "r2 r2"}, text, "%d answers mixed revisions or failed", n)
		}
		for _, r := range replicas {
			h := r.health(t, annToken)
			require.Equal(t, "r2", h.BundleRevision)
			require.Equal(t, "ok", h.Status)
			require.NotNil(t, h.Bundle)
			require.Equal(t, "r2", h.Bundle.Revision)
			require.NotEmpty(t, h.Bundle.ETag)
			require.False(t, h.Bundle.Persisted)
			revs := r.auditRevisions(t, "probe")
			require.NotEmpty(t, revs)
			require.Equal(t, "r2", revs[len(revs)-1], "the audit record names the bundle's revision")
		}
	})

	t.Run("a badly signed bundle is refused by both", func(t *testing.T) {
		srv.Set(signedBundle(t, "r3", otherKey.private))
		for _, r := range replicas {
			until(t, "replica "+r.name+" reports the signature", func() bool {
				h := r.health(t, annToken)
				return h.Status == "degraded" && strings.Contains(h.LastError, "signature")
			})
			require.Equal(t, "r2", r.health(t, annToken).BundleRevision)
			require.Equal(t, "r2 r2", probe(t, sessions[r]))
		}
	})

	t.Run("a bundle that does not compile is refused by both", func(t *testing.T) {
		bad := revisionSource(t, "r4", map[string]string{"broken.rego": "package toolgate.grant\n\nx := y\n"})
		raw, err := bundletest.SignedUnchecked(bad, "r4", key.private)
		require.NoError(t, err)
		srv.Set(raw)
		for _, r := range replicas {
			until(t, "replica "+r.name+" reports r4", func() bool {
				h := r.health(t, annToken)
				return h.Status == "degraded" && strings.Contains(h.LastError, `"r4"`)
			})
			require.Equal(t, "r2", r.health(t, annToken).BundleRevision)
			require.Equal(t, "r2 r2", probe(t, sessions[r]))
		}
	})

	t.Run("one idempotency key sent to both replicas runs the method once", func(t *testing.T) {
		const n = 10
		var wg sync.WaitGroup
		start := make(chan struct{})
		results := make([]*mcp.CallToolResult, n)
		errs := make([]error, n)
		for i := range n {
			r := replicas[i%2]
			cs := r.connect(t, annToken)
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				ctx, cancel := context.WithTimeout(t.Context(), callTimeout)
				defer cancel()
				results[i], errs[i] = cs.CallTool(ctx, &mcp.CallToolParams{Name: "count", Arguments: map[string]any{"key": "idem"},
					Meta: mcp.Meta{"festi/idempotencyKey": "k-1"}})
			}()
		}
		close(start)
		wg.Wait()
		for i, res := range results {
			require.NoError(t, errs[i])
			require.Len(t, res.Content, 1)
			ans := answer{Text: res.Content[0].(*mcp.TextContent).Text, IsError: res.IsError}
			if ans.IsError {
				require.Equal(t, "This call is already running. Retry once it finished.", ans.Text)
			} else {
				require.Equal(t, "1", ans.Text, "the one result, replayed")
			}
		}
		// demo.count counts per process: the replica that ran it is at 1.
		ran := 0
		for _, r := range replicas {
			v, err := strconv.Atoi(call(t, sessions[r], "count", map[string]any{"key": "idem"}, nil).Text)
			require.NoError(t, err)
			ran += v - 1
		}
		require.Equal(t, 1, ran, "demo.count ran once across both replicas")
	})

	t.Run("an approval made on one replica is consumed on the other", func(t *testing.T) {
		args := map[string]any{"key": "approved"}
		first := call(t, sessions[a], "resetCounter", args, nil)
		m := held.FindStringSubmatch(first.Text)
		require.NotNil(t, m, first.Text)
		// bea approves on replica a, over HTTP with her own credentials.
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, a.base+"/approvals/"+m[1]+"/approve", strings.NewReader(`{"note": "replicatest"}`))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+beaToken)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)

		ran := call(t, sessions[b], "resetCounter", args, nil)
		require.Equal(t, answer{Text: "1"}, ran, "the approved call runs on replica b")
		again := call(t, sessions[a], "resetCounter", args, nil)
		require.True(t, again.IsError)
		m2 := held.FindStringSubmatch(again.Text)
		require.NotNil(t, m2, again.Text)
		require.NotEqual(t, m[1], m2[1], "the approval was used: a new request")
	})

	t.Run("every call on either replica has one decision-log event with its revision", func(t *testing.T) {
		// Audit lines and events are both written after the call, each
		// through its own buffer: wait until they name the same calls.
		var (
			audited map[string]string
			events  map[string][]logs.EventV1
		)
		until(t, "the sink and the audit trails name the same calls", func() bool {
			audited = map[string]string{}
			for _, r := range replicas {
				for id, rev := range r.auditCalls(t) {
					audited[id] = rev
				}
			}
			var bad []string
			events, bad = sink.calls()
			require.Empty(t, bad, "uploads that do not decode with OPA's EventV1")
			if len(events) != len(audited) {
				return false
			}
			for id := range audited {
				if len(events[id]) == 0 {
					return false
				}
			}
			return true
		})
		require.NotEmpty(t, audited)
		revs := map[string]int{}
		for id, rev := range audited {
			require.Len(t, events[id], 1, "call %s", id)
			e := events[id][0]
			require.Equal(t, rev, e.Revision, "call %s", id)
			require.Len(t, e.Bundles, 1)
			for _, b := range e.Bundles {
				require.Equal(t, rev, b.Revision, "call %s", id)
			}
			revs[rev]++
		}
		for id := range events {
			require.Contains(t, audited, id, "an event for a call no replica made")
		}
		require.Subset(t, []string{"r1", "r2"}, keys(revs))
		t.Logf("%d calls, one event each, by revision: %v", len(audited), revs)
	})

	t.Run("with the bundle server down a restarted replica serves the persisted bundle", func(t *testing.T) {
		hs.Close()
		b.stop()
		b.start(t)
		cs := b.connect(t, annToken)
		require.Equal(t, "r2 r2", probe(t, cs))
		h := b.health(t, annToken)
		require.Equal(t, "r2", h.BundleRevision)
		require.True(t, h.Bundle.Persisted, "served from the state directory")
		require.Equal(t, "r2 r2", probe(t, sessions[a]), "replica a keeps serving too")
	})

}

func keys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
