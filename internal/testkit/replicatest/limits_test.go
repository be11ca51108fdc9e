package replicatest

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/testkit/mcptest"
	"github.com/toolgate/toolgate/internal/testkit/pgtest"
)

// sharedLimit admits ten echo calls an hour, whoever calls and on
// whichever replica.
const sharedLimit = `package toolgate.call

limit contains {"key": "echo", "max": 10, "per": "1h", "reason": "ten echoes an hour"} if input.tool.name == "echo"
`

var limitedAnswer = regexp.MustCompile(`^Rate limit exceeded: ten echoes an hour\. Try again in 36\d\d s\.$`)

// TestReplicasShareLimits (docs/contract.md §18): two `toolgate serve` processes
// sharing PostgreSQL count one limit: of 50 concurrent calls, 25 to each,
// against max 10, exactly 10 run; the others are limited, audited as
// limited and counted in toolgate_limited_total{tool}.
func TestReplicasShareLimits(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two toolgate processes and PostgreSQL; skipped with -short")
	}
	store := pgtest.Schema(t, "replica_limits")
	bin := buildBinary(t)
	dir := t.TempDir()
	policies := filepath.Join(dir, "rego")
	require.NoError(t, os.MkdirAll(policies, 0o700))
	for _, name := range []string{"grant.rego", "call.rego"} {
		data, err := toolgate.Bundled.ReadFile("rego/" + name)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(policies, name), data, 0o600))
	}
	require.NoError(t, os.WriteFile(filepath.Join(policies, "limits.rego"), []byte(sharedLimit), 0o600))
	registry := filepath.Join(dir, "registry.yaml")
	require.NoError(t, os.WriteFile(registry, toolgate.ExampleRegistry(), 0o600))
	tokens := writeTokens(t, dir, "manager")

	replicas := startReplicas(t, bin, dir, "--registry", registry, "--policy", policies, "--ledger", store, "--tokens", tokens, "--no-watch")

	const n = 50
	sessions := make([]*mcp.ClientSession, n)
	for i := range n {
		token := annToken
		if i%4 >= 2 {
			token = beaToken
		}
		sessions[i] = replicas[i%2].connect(t, token)
	}
	texts := make([]string, n)
	errs := make([]error, n)
	isErr := make([]bool, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			ctx, cancel := context.WithTimeout(t.Context(), callTimeout)
			defer cancel()
			res, err := sessions[i].CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": strconv.Itoa(i)}})
			if err != nil {
				errs[i] = err
				return
			}
			if len(res.Content) == 1 {
				if tc, ok := res.Content[0].(*mcp.TextContent); ok {
					texts[i] = tc.Text
				}
			}
			isErr[i] = res.IsError
		}()
	}
	close(start)
	wg.Wait()
	ran, limited := 0, 0
	for i := range n {
		require.NoError(t, errs[i], "call %d", i)
		switch {
		case !isErr[i] && texts[i] == strconv.Itoa(i):
			ran++
		case isErr[i] && limitedAnswer.MatchString(texts[i]):
			limited++
		default:
			t.Errorf("call %d answered %q (isError %v)", i, texts[i], isErr[i])
		}
	}
	require.Equal(t, 10, ran, "exactly max calls ran across both replicas")
	require.Equal(t, n-10, limited)

	audited, counted := 0, 0.0
	for _, r := range replicas {
		audited += countOutcome(t, r.audit, "limited")
		counted += limitedMetric(t, r, annToken)
	}
	require.Equal(t, n-10, audited, "every limited call is audited as limited")
	require.Equal(t, float64(n-10), counted, "toolgate_limited_total{tool=\"echo\"} over both replicas")
}

// countOutcome counts the audit records of the outcome, once the file
// holds every call's record (the trail is written after the answer).
func countOutcome(t *testing.T, path, outcome string) int {
	t.Helper()
	count := func() (int, int) {
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		n, total := 0, 0
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var rec struct {
				Tool    string `json:"tool"`
				Outcome string `json:"outcome"`
			}
			if json.Unmarshal([]byte(line), &rec) != nil || rec.Tool != "echo" {
				continue
			}
			total++
			if rec.Outcome == outcome {
				n++
			}
		}
		return n, total
	}
	until(t, "the audit trail of "+path+" holds all 25 calls", func() bool { _, total := count(); return total == 25 })
	n, _ := count()
	return n
}

var limitedLine = regexp.MustCompile(`(?m)^toolgate_limited_total\{tool="echo"\} (\d+)$`)

// limitedMetric reads toolgate_limited_total{tool="echo"} from the
// replica's /metrics (an operator's).
func limitedMetric(t *testing.T, r *replica, token string) float64 {
	t.Helper()
	status, body := mcptest.Get(t, t.Context(), r.base+"/metrics", token)
	require.Equal(t, http.StatusOK, status, "%s", body)
	m := limitedLine.FindSubmatch(body)
	if m == nil {
		return 0
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	require.NoError(t, err, string(m[1]))
	return v
}
