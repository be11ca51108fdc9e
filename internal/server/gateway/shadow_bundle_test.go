package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/decisionlog"
	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/runtime/bundle"
	"github.com/toolgate/toolgate/internal/server/gateway"
	"github.com/toolgate/toolgate/internal/server/shadow"
	"github.com/toolgate/toolgate/internal/testkit/benchdata"
	"github.com/toolgate/toolgate/internal/testkit/bundletest"
	"github.com/toolgate/toolgate/internal/testkit/mcptest"
	"github.com/toolgate/toolgate/internal/testkit/shadowtest"
	"github.com/toolgate/toolgate/toolcall"
)

// notCompiling is a grant policy that parses (OPA's bundle reader takes
// it) but does not compile: the engine refuses it.
const notCompiling = "package toolgate.grant\n\ngranted := {t | some t in no_such_function(input.tools)}\n"

// polledServer is a bundle server (bundletest.Server) that tells when a
// bundle set has been read by the poller and the poll after it has come:
// the poller handles one download before asking again, so by then the
// bundle set was activated or refused.
type polledServer struct {
	*bundletest.Server
	mu    sync.Mutex
	since int
	seen  chan struct{}
}

func newPolledServer(raw []byte) *polledServer {
	return &polledServer{Server: bundletest.NewServer(raw)}
}

// set serves raw and returns a channel closed once raw was handled.
func (p *polledServer) set(raw []byte) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.Server.Set(raw)
	p.since, p.seen = 0, make(chan struct{})
	return p.seen
}

func (p *polledServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.since++
	if p.since == 2 && p.seen != nil {
		close(p.seen)
		p.seen = nil
	}
	p.mu.Unlock()
	p.Server.ServeHTTP(w, r)
}

// shadowHealth reads the shadow of /healthz?verbose=1 as root.
func shadowHealth(t *testing.T, base string, root *toolcall.Caller) shadow.Status {
	t.Helper()
	return shadowAt(t, base+"/healthz?verbose=1", root)
}

// shadowAt reads the shadow member of the JSON document at url as root.
func shadowAt(t *testing.T, url string, root *toolcall.Caller) shadow.Status {
	t.Helper()
	status, b := mcptest.Get(t, t.Context(), url, tokenFor(root))
	require.Equal(t, http.StatusOK, status)
	var body struct {
		Shadow *shadow.Status `json:"shadow"`
	}
	require.NoError(t, json.Unmarshal(b, &body))
	require.NotNil(t, body.Shadow)
	return *body.Shadow
}

// metricValue reads one sample (name and labels as /metrics prints them)
// from /metrics as root.
func metricValue(t *testing.T, base string, root *toolcall.Caller, sample string) string {
	t.Helper()
	status, b := mcptest.Get(t, t.Context(), base+"/metrics", tokenFor(root))
	require.Equal(t, http.StatusOK, status)
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), sample+" "); ok {
			return v
		}
	}
	t.Fatalf("/metrics has no %s", sample)
	return ""
}

// shadowEvents are the shadow's decision-log events of the file at path,
// as "method tool subject kind candidate-revision", sorted.
func shadowEvents(t *testing.T, path string) []string {
	t.Helper()
	var out []string
	for _, ev := range shadowtest.Events(t, path) {
		out = append(out, strings.Join([]string{ev.Method, ev.Tool, ev.Subject, ev.Kind, ev.Candidate}, " "))
	}
	sort.Strings(out)
	return out
}

// TestShadowBundle: served from a bundle, with --shadow-bundle naming a
// candidate bundle on the same bundle server (polled as the serving one
// is), the candidate that hides price from managers records exactly that
// difference (listed and called) while the manager's call of price still
// runs. A new candidate that does not compile is refused like a reload:
// reported on the verbose /healthz, never evaluated; the one before it
// is still compared. Not parallel: the state directory is set through the
// environment.
func TestShadowBundle(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	dir := t.TempDir()
	serving := bundletest.NewServer(exampleBundle(t, "prod-1", ""))
	cand := newPolledServer(exampleBundle(t, "next-1", benchdata.ManagersLosePrice))
	mux := http.NewServeMux()
	mux.Handle("/serving.tar.gz", serving)
	mux.Handle("/next.tar.gz", cand)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	max := &toolcall.Caller{Subject: "max", Roles: []string{"manager"}}
	root := &toolcall.Caller{Subject: "root", Roles: []string{"admin"}}
	one := int64(1)
	logPath := filepath.Join(dir, "decisions.jsonl")
	g := startGateway(t, gateway.Config{Serve: config.Serve{Tokens: writeTokens(t, dir, max, root), Ledger: "memory",
		Audit: filepath.Join(dir, "audit.jsonl"), DecisionLog: decisionlog.Settings{Target: logPath},
		Bundle: bundle.Config{URL: srv.URL + "/serving.tar.gz", Polling: bundle.Polling{MinDelaySeconds: &one, MaxDelaySeconds: &one}},
		Shadow: shadow.Settings{Bundle: srv.URL + "/next.tar.gz"}}})
	base := strings.TrimSuffix(g.url, "/mcp")
	ctx := context.Background()

	st := shadowHealth(t, base, root)
	require.Empty(t, st.Error)
	require.NotEmpty(t, st.Candidate)
	first := st.Candidate
	require.Equal(t, "0", metricValue(t, base, root, "toolgate_shadow_candidate_refused_total"))

	callPrice := func() {
		t.Helper()
		cs := connect(t, ctx, g.url, protocols[len(protocols)-1], max)
		list, err := cs.ListTools(ctx, nil)
		require.NoError(t, err)
		var names []string
		for _, tl := range list.Tools {
			names = append(names, tl.Name)
		}
		require.Contains(t, names, "price", "the serving policy lists price to managers")
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "price", Arguments: map[string]any{"price": map[string]any{"amount": "1.50", "currency": "EUR"}}})
		require.NoError(t, err)
		require.False(t, res.IsError, "the answer is the serving policy's")
		require.NoError(t, cs.Close())
	}
	callPrice()

	// A candidate that does not compile: refused, the first one stays.
	broken, err := bundletest.SignedUnchecked(bundletest.Example(t, notCompiling), "next-2", "")
	require.NoError(t, err)
	<-cand.set(broken)
	st = shadowHealth(t, base, root)
	require.Equal(t, first, st.Candidate)
	require.Contains(t, st.Refused, "no_such_function")
	require.Contains(t, st.Refused, "next-2")
	require.Equal(t, st.Refused, shadowAt(t, base+"/console/api/status", root).Refused, "the console's status view")
	require.Equal(t, "1", metricValue(t, base, root, "toolgate_shadow_candidate_refused_total"))
	callPrice()

	require.NoError(t, g.stop())
	want := []string{
		"tools/call price max " + shadow.GrantedHidden + " " + first,
		"tools/call price max " + shadow.GrantedHidden + " " + first,
		"tools/list price max " + shadow.GrantedHidden + " " + first,
		"tools/list price max " + shadow.GrantedHidden + " " + first,
	}
	require.Equal(t, want, shadowEvents(t, logPath))
}

// TestShadowBundleThatDoesNotCompileIsNeverEvaluated: a candidate bundle
// that does not compile at start is reported (the verbose /healthz names
// its revision and error) and never evaluated; serving goes on.
func TestShadowBundleThatDoesNotCompileIsNeverEvaluated(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	broken, err := bundletest.SignedUnchecked(bundletest.Example(t, notCompiling), "next-1", "")
	require.NoError(t, err)
	srv := httptest.NewServer(bundletest.NewServer(broken))
	defer srv.Close()
	max := &toolcall.Caller{Subject: "max", Roles: []string{"manager"}}
	root := &toolcall.Caller{Subject: "root", Roles: []string{"admin"}}
	logPath := filepath.Join(dir, "decisions.jsonl")
	g := startGateway(t, gateway.Config{Serve: config.Serve{Tokens: writeTokens(t, dir, max, root), Ledger: "memory",
		Audit: filepath.Join(dir, "audit.jsonl"), DecisionLog: decisionlog.Settings{Target: logPath}, Shadow: shadow.Settings{Bundle: srv.URL + "/next.tar.gz"}}})
	ctx := context.Background()
	cs := connect(t, ctx, g.url, protocols[len(protocols)-1], max)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "price", Arguments: map[string]any{"price": map[string]any{"amount": "1.50", "currency": "EUR"}}})
	require.NoError(t, err)
	require.False(t, res.IsError)
	require.NoError(t, cs.Close())
	st := shadowHealth(t, strings.TrimSuffix(g.url, "/mcp"), root)
	require.Contains(t, st.Error, "no_such_function")
	require.Contains(t, st.Error, "next-1")
	require.Empty(t, st.Candidate)
	require.Zero(t, st.Compared)
	require.Equal(t, "1", metricValue(t, strings.TrimSuffix(g.url, "/mcp"), root, "toolgate_shadow_candidate_refused_total"))
	require.NoError(t, g.stop())
	require.Empty(t, shadowEvents(t, logPath))
}
