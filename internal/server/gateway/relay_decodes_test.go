package gateway_test

import (
	"context"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/server/gateway"
	"github.com/toolgate/toolgate/internal/testkit/decodes"
	"github.com/toolgate/toolgate/internal/testkit/proctest"
	"github.com/toolgate/toolgate/toolcall"
	"github.com/toolgate/toolgate/upstream"
)

// relayDecodeCalls is how many calls each count is made over.
const relayDecodeCalls = 20

// relayedCallDecodes counts the go-sdk decodes one relayed tools/call
// costs this process (the gateway's and the client's) at protocol
// revision proto, to the conformance server over streamable HTTP (its own
// decodes in its own process), and the decodes the same client's call
// costs without the gateway. It returns the gateway's (the difference)
// per call, by the first toolgate function on the stack ("" when the
// stack has none: the SDK's own work).
func relayedCallDecodes(t *testing.T, proto string) (perCall float64, byToolgate map[string]int64, client float64) {
	t.Helper()
	up := startEverythingHTTP(t, false) + "/mcp"
	dir := t.TempDir()
	caller := &toolcall.Caller{Subject: "alice"}
	reg, pol := writeSource(t, dir, "tools:\n  - {name: simple, method: \"upstream:ev/test_simple_text\"}\n", "package toolgate.grant\n")
	watch := false
	g := startGateway(t, gateway.Config{
		Serve: config.Serve{Registry: reg, Policy: pol, Tokens: writeTokens(t, dir, caller),
			Upstreams: []upstream.Settings{{Name: "ev", URL: up}},
			Ledger:    "memory", Audit: filepath.Join(dir, "audit.jsonl"), Watch: &watch},
		Stderr: &proctest.Buffer{},
	})
	ctx := context.Background()
	count := func(cs *mcp.ClientSession, tool string) decodes.Counts {
		call := func() {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool})
			require.NoError(t, err)
			require.False(t, res.IsError, "%+v", res)
		}
		call() // warm: the upstream session, the decision
		before := decodes.Take()
		for range relayDecodeCalls {
			call()
		}
		return decodes.Take().Sub(before)
	}
	direct := count(connectPlain(t, up, proto), "test_simple_text")
	relayed := count(connectClient(t, g.url, proto, caller), "simple")
	byToolgate = relayed.By("github.com/modelcontextprotocol/go-sdk/", "github.com/segmentio/", "runtime.", "reflect.", "encoding/json.")
	for _, k := range decodes.Sorted(byToolgate) {
		t.Logf("%s: %.1f decodes per call at %s", cmpOr(k, "the go-sdk alone"), float64(byToolgate[k])/relayDecodeCalls, cmpOr(proto, "the default revision"))
	}
	client = float64(direct.Total()) / relayDecodeCalls
	perCall = float64(relayed.Total())/relayDecodeCalls - client
	t.Logf("%s: %.1f go-sdk decodes per relayed call in the gateway (%.1f in the client)", cmpOr(proto, "the default revision"), perCall, client)
	return perCall, byToolgate, client
}

func cmpOr(s, or string) string {
	if s == "" {
		return or
	}
	return s
}

// connectPlain opens a go-sdk streamable HTTP session to url under proto
// ("": the client's default revision), with no credentials.
func connectPlain(t *testing.T, url, proto string) *mcp.ClientSession {
	t.Helper()
	tr := &http.Transport{}
	var opts *mcp.ClientSessionOptions
	if proto != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: proto}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "decodes-test", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: tr}, DisableStandaloneSSE: true}, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close(); tr.CloseIdleConnections() })
	return cs
}

// sdkEntries are the go-sdk functions whose own work decodes a relayed
// call's messages: its HTTP handler reading the request, and its client
// sending one and reading the answer (toolgate's call upstream, and the
// test's client).
var sdkEntries = []string{
	"github.com/modelcontextprotocol/go-sdk/mcp.(*StreamableHTTPHandler).ServeHTTP",
	"github.com/modelcontextprotocol/go-sdk/mcp.(*ClientSession).CallTool",
}

// TestRelayedCallDecodesNoneOfToolgates: a relayed tools/call costs the
// go-sdk decodes the SDK's server and client make of the messages (the
// request, its params, the upstream's answer ...), and not one that
// toolgate's own code asks for (such as reading the client's capabilities
// again on every call), at the client's default revision and at
// 2025-11-25. Each decode allocates a 32 KiB buffer (the SDK's decoder),
// the most of what a relayed call allocates; the test logs how many and
// where.
func TestRelayedCallDecodesNoneOfToolgates(t *testing.T) {
	decodes.Start()
	for _, proto := range []string{"", "2025-11-25"} {
		t.Run(cmpOr(proto, "default revision"), func(t *testing.T) {
			_, by, _ := relayedCallDecodes(t, proto)
			for k, n := range by {
				_, inner, _ := strings.Cut(k, " → ")
				if k != "" && !slices.Contains(sdkEntries, inner) {
					t.Errorf("%s asks the go-sdk for %.1f decodes per relayed call", k, float64(n)/relayDecodeCalls)
				}
			}
		})
	}
}
