package gateway_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/open-policy-agent/opa/v1/plugins/logs"
	"github.com/stretchr/testify/require"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/toolgate/toolgate/decisionlog"
	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/server/gateway"
	"github.com/toolgate/toolgate/internal/testkit/mcptest"
	"github.com/toolgate/toolgate/toolcall"
	"github.com/toolgate/toolgate/tracing"
)

// observeSinks are a loopback decision-log service (decoding with OPA's own
// event type) and a loopback OTLP/HTTP receiver.
type observeSinks struct {
	mu     sync.Mutex
	events []logs.EventV1
	spans  map[string]string // span name → trace id (hex)
	logs   *httptest.Server
	otlp   *httptest.Server
}

func newObserveSinks(t *testing.T) *observeSinks {
	s := &observeSinks{spans: map[string]string{}}
	s.logs = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			t.Errorf("decision-log upload is not gzip: %v", err)
			return
		}
		body, _ := io.ReadAll(zr)
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		var batch []logs.EventV1
		if err := dec.Decode(&batch); err != nil {
			t.Errorf("upload does not decode as []logs.EventV1: %v", err)
		}
		s.mu.Lock()
		s.events = append(s.events, batch...)
		s.mu.Unlock()
	}))
	s.otlp = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req := &collectortrace.ExportTraceServiceRequest{}
		if err := proto.Unmarshal(body, req); err != nil {
			t.Errorf("OTLP export does not decode: %v", err)
		}
		s.mu.Lock()
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, sp := range ss.Spans {
					s.spans[sp.Name] = hexOf(sp.TraceId)
				}
			}
		}
		s.mu.Unlock()
		b, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(b)
	}))
	t.Cleanup(s.logs.Close)
	t.Cleanup(s.otlp.Close)
	return s
}

func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

const clientTrace = "4bf92f3577b34da6a3ce929d0e0e4736"

// A served call continues the client's trace from _meta, its spans reach
// the OTLP endpoint, its decisions reach the decision-log sink in OPA's
// shape with the trace id and without argument values, and the audit line
// carries the trace id: all flushed by a clean shutdown.
func TestObserveDecisionLogsAndTraces(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sinks := newObserveSinks(t)
	ops := &toolcall.Caller{Subject: "ops", Roles: []string{"manager", "reader"}}
	admin := &toolcall.Caller{Subject: "root", Roles: []string{"admin"}}
	auditPath := filepath.Join(dir, "audit.jsonl")
	g := startGateway(t, gateway.Config{Serve: config.Serve{
		Tokens: writeTokens(t, dir, ops, admin), Ledger: "memory", Audit: auditPath,
		DecisionLog: decisionlog.Settings{Target: sinks.logs.URL + "/logs"}, Tracing: tracing.Settings{Endpoint: sinks.otlp.URL, TrustTraceparent: true},
	}})
	cs := connect(t, t.Context(), g.url, protocols[len(protocols)-1], ops)
	_, err := cs.ListTools(t.Context(), &mcp.ListToolsParams{Meta: mcp.Meta{"traceparent": "00-" + clientTrace + "-00f067aa0ba902b7-01"}})
	require.NoError(t, err)
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "add", Arguments: map[string]any{"a": 123456789, "b": 3},
		Meta: mcp.Meta{"traceparent": "00-" + clientTrace + "-00f067aa0ba902b7-01"}})
	require.NoError(t, err)
	require.False(t, res.IsError)
	// Refused at step 4: a name the caller may not see and one no row has
	// are each one grant decision, logged, and no call decision.
	for _, name := range []string{"execUrl", "absentToolName"} {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{"url": "http://x"},
			Meta: mcp.Meta{"traceparent": "00-" + clientTrace + "-00f067aa0ba902b7-01"}})
		require.NoError(t, err)
		require.Equal(t, "Error: Unknown tool '"+name+"'.", res.Content[0].(*mcp.TextContent).Text)
	}
	require.NoError(t, cs.Close())

	// The decision log's counters are in /metrics.
	status, body := mcptest.Get(t, t.Context(), strings.TrimSuffix(g.url, "/mcp")+"/metrics", tokenFor(admin))
	require.Equal(t, http.StatusOK, status, string(body))
	require.Contains(t, string(body), "\ntoolgate_decision_log_dropped_total 0\n")
	require.Contains(t, string(body), "toolgate_decision_log_written_total")

	require.NoError(t, g.stop())

	sinks.mu.Lock()
	defer sinks.mu.Unlock()
	paths := map[string]int{}
	for _, e := range sinks.events {
		paths[e.Path]++
		require.Equal(t, clientTrace, e.TraceID, "event %s", e.Path)
		require.NotEmpty(t, e.Bundles["toolgate"].Revision)
		require.Equal(t, "dev", e.Labels["version"])
		raw, _ := json.Marshal(e.Input)
		require.NotContains(t, string(raw), "123456789", "an argument value reached the decision log")
		if e.Path == "toolgate/call" {
			res := (*e.Result).(map[string]any)
			require.Equal(t, "result", res["outcome"])
			require.Equal(t, "run", res["stage"])
			require.Contains(t, e.Metrics, "timer_toolgate_grant_ns")
		}
	}
	require.Equal(t, map[string]int{"toolgate/grant/granted": 4, "toolgate/call": 1}, paths)
	for _, name := range []string{"tools/list", "tools/call add", "toolgate.hook ledger before", "toolgate.hook audit after", "toolgate.method demo.add", "toolgate.grant", "toolgate.call_rules"} {
		require.Equal(t, clientTrace, sinks.spans[name], "span %q (spans: %v)", name, sinks.spans)
	}

	f, err := os.Open(auditPath)
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	require.True(t, sc.Scan())
	first := sc.Text()
	require.True(t, strings.Contains(first, `"trace_id":"`+clientTrace+`"`), first)
	require.False(t, sc.Scan(), "the step 4 refusals write no audit line")

	// The call's event is the audit line's decision, at its revision.
	var line struct {
		DecisionID string `json:"decision_id"`
		Revision   string `json:"revision"`
	}
	require.NoError(t, json.Unmarshal([]byte(first), &line))
	found := 0
	for _, e := range sinks.events {
		require.Equal(t, line.Revision, e.Bundles["toolgate"].Revision, "event %s", e.Path)
		require.Equal(t, line.Revision, e.Revision, "event %s", e.Path)
		if e.DecisionID == line.DecisionID {
			require.Equal(t, "toolgate/call", e.Path)
			found++
		}
	}
	require.Equal(t, 1, found, "one call event has the audit line's decision_id %s", line.DecisionID)
}

// withHeader adds one header to every request.
type withHeader struct {
	key, value string
	next       http.RoundTripper
}

func (h withHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(h.key, h.value)
	return h.next.RoundTrip(r)
}

// Without a _meta traceparent, the HTTP request's traceparent header
// continues the client's trace.
func TestObserveTraceFromHTTPHeader(t *testing.T) {
	t.Parallel()
	const headerTrace = "0af7651916cd43dd8448eb211c80319c"
	dir := t.TempDir()
	sinks := newObserveSinks(t)
	ops := &toolcall.Caller{Subject: "ops", Roles: []string{"manager", "reader"}}
	g := startGateway(t, gateway.Config{Serve: config.Serve{
		Tokens: writeTokens(t, dir, ops), Ledger: "memory", Audit: filepath.Join(dir, "audit.jsonl"), Tracing: tracing.Settings{Endpoint: sinks.otlp.URL, TrustTraceparent: true},
	}})
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	rt := withHeader{"traceparent", "00-" + headerTrace + "-b7ad6b7169203331-01", mcptest.Bearer{Token: tokenFor(ops), Next: tr}}
	client := mcp.NewClient(&mcp.Implementation{Name: "gateway-test", Version: "1"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: g.url, HTTPClient: &http.Client{Transport: rt}, DisableStandaloneSSE: true}, nil)
	require.NoError(t, err)
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "add", Arguments: map[string]any{"a": 1, "b": 2}})
	require.NoError(t, err)
	require.False(t, res.IsError)
	require.NoError(t, cs.Close())
	require.NoError(t, g.stop())
	sinks.mu.Lock()
	defer sinks.mu.Unlock()
	require.Equal(t, headerTrace, sinks.spans["tools/call add"], "spans: %v", sinks.spans)
}
