package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/testkit/pgtest"
)

// historyRegistry keeps an hour of each caller's calls (at most 100) and
// has a row for each policy-over-time rule of historyPolicy; read_secret
// is in a section only admins see.
const historyRegistry = `history: {per: 1h, max: 100}

sections:
  reports: { roles: [admin] }

tools:
  - name: refund
    method: demo.add
    arguments:
      - { name: a, type: int, required: true }
      - { name: b, type: int, required: true }
  - name: read_record
    method: demo.echo
    remember: [text]
    arguments: [{ name: text, type: string, required: true }]
  - name: delete_record
    method: demo.echo
    remember: [text]
    arguments: [{ name: text, type: string, required: true }]
  - name: pay
    method: demo.fail
  - name: deploy
    method: demo.echo
    remember: [text]
    arguments: [{ name: text, type: string, required: true }]
  - name: read_secret
    method: demo.echo
    section: reports
    remember: [text]
    arguments: [{ name: text, type: string, required: true }]
  - name: my_history
    method: demo.echo
    arguments: [{ name: text, type: string, required: true }]
`

// historyPolicy: a budget of 500 refunded a day per caller (refund's a is
// the amount), a record deleted only after the caller read it, no payment
// after three failed ones within the hour, a second production deploy
// within ten minutes held for an admin's approval; my_history answers
// the caller's input.history (tool, outcome, arguments).
const historyPolicy = `package toolgate.call

limit contains {
	"key": sprintf("refunds/%s", [input.caller.subject]),
	"max": 500,
	"per": "24h",
	"cost": input.request.arguments.a,
	"reason": "refunds of more than 500 a day",
} if {
	input.tool.name == "refund"
}

deny contains "read the record before deleting it" if {
	input.tool.name == "delete_record"
	not read_first
}

read_first if {
	some h in input.history
	h.tool == "read_record"
	h.outcome == "result"
	h.arguments.text == input.request.arguments.text
}

deny contains "three payments failed within the hour" if {
	input.tool.name == "pay"
	failed := [h |
		some h in input.history
		h.tool == "pay"
		h.outcome == "failed"
		time.parse_rfc3339_ns(h.at) > time.now_ns() - ((60 * 60) * 1000000000)
	]
	count(failed) >= 3
}

approval := {
	"reason": "a second production deploy within ten minutes",
	"approvers": ["admin"],
	"ttl": "1h",
} if {
	input.tool.name == "deploy"
	input.request.arguments.text == "production"
	some h in input.history
	h.tool == "deploy"
	h.outcome == "result"
	h.arguments.text == "production"
	time.parse_rfc3339_ns(h.at) > time.now_ns() - ((10 * 60) * 1000000000)
}

result := {"content": [{"type": "text", "text": concat(" ", [sprintf("%s:%s:%s", [h.tool, h.outcome, json.marshal(h.arguments)]) |
	some h in input.history
])}]} if {
	input.tool.name == "my_history"
}
`

// writeHistoryProject writes historyRegistry and the bundled grant policy
// with historyPolicy into a directory and returns the serve arguments
// naming them and the tokens file (ann an admin, max a manager).
func writeHistoryProject(t *testing.T) []string {
	t.Helper()
	dir := t.TempDir()
	policies := filepath.Join(dir, "rego")
	require.NoError(t, os.MkdirAll(policies, 0o700))
	grant, err := toolgate.Bundled.ReadFile("rego/grant.rego")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(policies, "grant.rego"), grant, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(policies, "history.rego"), []byte(historyPolicy), 0o600))
	registry := filepath.Join(dir, "registry.yaml")
	require.NoError(t, os.WriteFile(registry, []byte(historyRegistry), 0o600))
	return []string{"--registry", registry, "--policy", policies, "--tokens", writeTokens(t)}
}

var (
	refundsLimited = regexp.MustCompile(`^Rate limit exceeded: refunds of more than 500 a day\. Try again in (\d+) s\.$`)
	secondDeploy   = regexp.MustCompile(`^Approval required: a second production deploy within ten minutes \(approval [0-9a-f]{24}\)\. Call again once it is approved\.$`)
)

// historyScenario plays the four policies over time through a and b,
// which share one store (a may be b): each step alternates between them,
// so that one sees what the other counted and recorded.
func historyScenario(t *testing.T, a, b *served) {
	const version = "2025-11-25"
	annA, annB := a.connect(t, adminToken, version, nil), b.connect(t, adminToken, version, nil)
	maxA, maxB := a.connect(t, managerToken, version, nil), b.connect(t, managerToken, version, nil)

	// A budget: 200 and 300 reach the sum of 500 exactly and run; one
	// more is refused until the first leaves the day's window; a cost
	// above the budget is refused for good. Another caller has a budget
	// of its own.
	start := time.Now()
	require.Equal(t, ok("201"), call(t, annA, "refund", map[string]any{"a": 200, "b": 1}, nil))
	require.Equal(t, ok("301"), call(t, annB, "refund", map[string]any{"a": 300, "b": 1}, nil), "at the sum")
	over := call(t, annA, "refund", map[string]any{"a": 1, "b": 1}, nil)
	elapsed := time.Since(start)
	require.True(t, over.IsError, "%+v", over)
	m := refundsLimited.FindStringSubmatch(over.Text)
	require.NotNil(t, m, "%q", over.Text)
	n, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	day := int(24 * time.Hour / time.Second)
	require.LessOrEqual(t, n, day, "N: until the first refund leaves the window")
	require.GreaterOrEqual(t, n, day-int(elapsed/time.Second)-1, "N: until the first refund leaves the window")
	require.Regexp(t, refundsLimited, call(t, annB, "refund", map[string]any{"a": 1, "b": 1}, nil).Text, "the other process counts the same")
	require.Equal(t, refused("Rate limit exceeded: refunds of more than 500 a day."),
		call(t, annA, "refund", map[string]any{"a": 501, "b": 0}, nil), "a cost above max")
	require.Equal(t, ok("501"), call(t, maxB, "refund", map[string]any{"a": 500, "b": 1}, nil), "another caller's budget")

	// Read before delete: only the caller's own successful read of the
	// same id counts.
	readFirst := refused("read the record before deleting it")
	require.Equal(t, readFirst, call(t, annA, "delete_record", map[string]any{"text": "r7"}, nil), "nothing read yet")
	require.Equal(t, ok("r7"), call(t, maxA, "read_record", map[string]any{"text": "r7"}, nil))
	require.Equal(t, readFirst, call(t, annB, "delete_record", map[string]any{"text": "r7"}, nil), "another caller's read")
	require.Equal(t, ok("r8"), call(t, annA, "read_record", map[string]any{"text": "r8"}, nil))
	require.Equal(t, readFirst, call(t, annB, "delete_record", map[string]any{"text": "r7"}, nil), "a read of another id")
	require.Equal(t, ok("r7"), call(t, annA, "read_record", map[string]any{"text": "r7"}, nil))
	require.Equal(t, ok("r7"), call(t, annB, "delete_record", map[string]any{"text": "r7"}, nil), "read by the same caller")

	// Failed attempts, counted by outcome: three payments fail, the
	// fourth is refused; the refusals are not failures, and another
	// caller's failures are not this one's.
	internal := refused("Error: An internal error occurred while executing the tool.")
	threeFailed := refused("three payments failed within the hour")
	require.Equal(t, internal, call(t, maxA, "pay", nil, nil), "another caller's failure")
	for i, cs := range []*mcp.ClientSession{annA, annB, annA} {
		require.Equal(t, internal, call(t, cs, "pay", nil, nil), "payment %d", i+1)
	}
	require.Equal(t, threeFailed, call(t, annB, "pay", nil, nil))
	require.Equal(t, threeFailed, call(t, annA, "pay", nil, nil), "refusals are not failures")
	require.Equal(t, internal, call(t, maxB, "pay", nil, nil), "max failed once before")

	// A second production deploy within ten minutes waits for approval;
	// a staging deploy does not, nor another caller's first.
	require.Equal(t, ok("production"), call(t, annA, "deploy", map[string]any{"text": "production"}, nil))
	require.Equal(t, ok("staging"), call(t, annB, "deploy", map[string]any{"text": "staging"}, nil))
	held := call(t, annB, "deploy", map[string]any{"text": "production"}, nil)
	require.True(t, held.IsError)
	require.Regexp(t, secondDeploy, held.Text)
	require.Equal(t, ok("production"), call(t, maxA, "deploy", map[string]any{"text": "production"}, nil), "another caller's first")

	// Hidden is absent: max's call of a tool it cannot see is recorded in
	// nobody's history, and max's input holds max's calls only.
	require.Equal(t, refused("Error: Unknown tool 'read_secret'."), call(t, maxB, "read_secret", map[string]any{"text": "s1"}, nil))
	require.Equal(t, ok("s2"), call(t, annA, "read_secret", map[string]any{"text": "s2"}, nil))
	require.Equal(t, ok(`deploy:result:{"text":"production"} pay:failed:{} pay:failed:{} read_record:result:{"text":"r7"} refund:result:{}`),
		call(t, maxA, "my_history", map[string]any{"text": "x"}, nil))
	require.Equal(t, ok(`read_secret:result:{"text":"s2"} deploy:held:{"text":"production"} deploy:result:{"text":"staging"} deploy:result:{"text":"production"} `+
		`pay:denied:{} pay:denied:{} pay:failed:{} pay:failed:{} pay:failed:{} `+
		`delete_record:result:{"text":"r7"} read_record:result:{"text":"r7"} delete_record:denied:{"text":"r7"} read_record:result:{"text":"r8"} `+
		`delete_record:denied:{"text":"r7"} delete_record:denied:{"text":"r7"} `+
		`refund:limited:{} refund:limited:{} refund:limited:{} refund:result:{} refund:result:{}`),
		call(t, annB, "my_history", map[string]any{"text": "x"}, nil))
}

// TestE2EPolicyOverTime: the four policies over time through one
// `toolgate serve` with the memory store — a budget refused at the sum
// with the seconds until it frees, read before delete, failed attempts
// counted by outcome, a second deploy held for approval — and hidden
// calls never in anyone's history.
func TestE2EPolicyOverTime(t *testing.T) {
	skipShort(t)
	t.Parallel()
	s := serveHTTP(t, writeHistoryProject(t)...)
	historyScenario(t, s, s)
}

// TestE2EHistorySharedSQLite: two `toolgate serve` processes sharing one
// SQLite file see each other's budgets and histories.
func TestE2EHistorySharedSQLite(t *testing.T) {
	skipShort(t)
	t.Parallel()
	args := append(writeHistoryProject(t), "--ledger", "sqlite:"+filepath.Join(t.TempDir(), "ledger.db"))
	historyScenario(t, serveHTTP(t, args...), serveHTTP(t, args...))
}

// TestE2EHistorySharedPostgres: two `toolgate serve` processes sharing
// PostgreSQL see each other's budgets and histories.
func TestE2EHistorySharedPostgres(t *testing.T) {
	skipShort(t)
	t.Parallel()
	args := append(writeHistoryProject(t), "--ledger", pgtest.Schema(t, "history_e2e"))
	historyScenario(t, serveHTTP(t, args...), serveHTTP(t, args...))
}

// TestE2EImportedToolRemember: an upstream's remember names the
// arguments an imported tool's calls leave in the caller's history; the
// others are not kept, and a caller who cannot see the imported tool
// leaves no entry by calling it.
func TestE2EImportedToolRemember(t *testing.T) {
	skipShort(t)
	t.Parallel()
	args := writeHistoryProject(t)
	cfg := filepath.Join(t.TempDir(), "toolgate.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(fmt.Sprintf(`upstreams:
  - { name: up, command: %q, import: true, section: reports, remember: { echo: [label] } }
`, upstreamBinary(t))), 0o600))
	s := serveHTTP(t, append(args, "--config", cfg)...)
	const version = "2025-11-25"
	ann, max := s.connect(t, adminToken, version, nil), s.connect(t, managerToken, version, nil)

	echo := call(t, ann, "up.echo", map[string]any{"label": "abc", "count": 2}, nil)
	require.False(t, echo.IsError, "%+v", echo)
	require.Equal(t, refused("Error: Unknown tool 'up.echo'."), call(t, max, "up.echo", map[string]any{"label": "max", "count": 1}, nil))
	require.Equal(t, ok(`up.echo:result:{"label":"abc"}`), call(t, ann, "my_history", map[string]any{"text": "x"}, nil))
	require.Equal(t, ok(""), call(t, max, "my_history", map[string]any{"text": "x"}, nil), "a hidden tool's call is in nobody's history")
}
