package gateway_test

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/toolcall"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/server/gateway"
)

// httpFixtures are conformance fixtures (mcpadapter/testdata/conformance)
// that the bundled example serves as it is (no test hooks, no policy or
// registry of their own): hidden ≡ absent, nobody, the approval gate, grants
// and argument answers.
var httpFixtures = []string{
	"step2-nobody",
	"step4-absent",
	"step4-hidden-by-base",
	"step4-hidden-by-override",
	"step5-rule-denies",
	"step5-rule-allows-with-approval",
	"method-result",
	"method-fails",
	"args-missing",
	"args-invalid-internal-type",
}

type httpFixture struct {
	name     string
	comment  string
	caller   *toolcall.Caller
	params   mcp.CallToolParams
	response string // the result, without _meta and resultType
}

var sectionRE = regexp.MustCompile(`(?m)^-- (.+) --\n`)

func loadHTTPFixture(t *testing.T, name string) *httpFixture {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "mcpadapter", "testdata", "conformance", name+".txt"))
	require.NoError(t, err)
	text := string(data)
	sections := map[string]string{}
	locs := sectionRE.FindAllStringSubmatchIndex(text, -1)
	for i, l := range locs {
		end := len(text)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		sections[text[l[2]:l[3]]] = text[l[1]:end]
	}
	f := &httpFixture{name: name, comment: strings.TrimSpace(text[:locs[0][0]])}
	var s struct {
		Caller *toolcall.Caller `json:"caller"`
		Hooks  []string         `json:"hooks"`
	}
	require.NoError(t, json.Unmarshal([]byte(sections["setup"]), &s))
	require.Empty(t, s.Hooks, "%s: needs test hooks the gateway does not have", name)
	for k := range sections {
		require.False(t, k == "registry" || strings.HasPrefix(k, "policy "), "%s: needs its own %s", name, k)
	}
	f.caller = s.Caller
	require.NoError(t, json.Unmarshal([]byte(sections["params"]), &f.params), name)
	f.response = resultOnly(t, []byte(sections["response"]))
	return f
}

var approvalIDRE = regexp.MustCompile(`\(approval [0-9a-f]{24}\)`)

// maskApprovalIDs replaces the id of a held answer (docs/contract.md §13) with ID.
func maskApprovalIDs(s string) string { return approvalIDRE.ReplaceAllString(s, "(approval ID)") }

// resultOnly returns a response's (or a bare result's) result without the
// _meta and resultType of newer revisions, re-encoded for comparison.
func resultOnly(t testing.TB, b []byte) string {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	if r, ok := m["result"].(map[string]any); ok {
		m = r
	}
	delete(m, "_meta")
	delete(m, "resultType")
	out, err := json.Marshal(m)
	require.NoError(t, err)
	return string(out)
}

// TestProtocolsOverHTTP runs conformance fixtures over streamable HTTP
// through gateway.Run (tokens, the shipped hooks, the bundled example) under
// every protocol revision, with go-sdk clients: each answers as over the
// in-memory transport, a hidden tool answers like a name no row has, and
// tools/list never shows it. No newer protocol path bypasses the filter.
func TestProtocolsOverHTTP(t *testing.T) {
	t.Parallel()
	var fixtures []*httpFixture
	var callers []*toolcall.Caller
	for _, name := range httpFixtures {
		f := loadHTTPFixture(t, name)
		fixtures = append(fixtures, f)
		if f.caller != nil && !slices.ContainsFunc(callers, func(c *toolcall.Caller) bool { return c.Subject == f.caller.Subject }) {
			callers = append(callers, f.caller)
		}
	}
	dir := t.TempDir()
	tokens := writeTokens(t, dir, callers...)

	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			t.Parallel()
			// One gateway per revision: demo.count's counters start at 0.
			g := startGateway(t, gateway.Config{Serve: config.Serve{Tokens: tokens, Ledger: "memory", Audit: filepath.Join(t.TempDir(), "audit.jsonl")}})
			ctx := context.Background()
			sessions := map[string]*mcp.ClientSession{}
			session := func(c *toolcall.Caller) *mcp.ClientSession {
				key := ""
				if c != nil {
					key = c.Subject
				}
				if cs, ok := sessions[key]; ok {
					return cs
				}
				cs := connect(t, ctx, g.url, proto, c)
				sessions[key] = cs
				return cs
			}
			call := func(c *toolcall.Caller, p mcp.CallToolParams) string {
				// The SDK client adds its per-request keys to _meta in place
				// (2026-07-28): give each call a copy of the shared fixture's.
				p.Meta = maps.Clone(p.Meta)
				res, err := session(c).CallTool(ctx, &p)
				require.NoError(t, err, "a JSON-RPC error reached the client (%s)", proto)
				b, err := json.Marshal(res)
				require.NoError(t, err)
				return resultOnly(t, b)
			}
			for _, f := range fixtures {
				got := call(f.caller, f.params)
				// Approval ids are random here, predictable in the fixtures.
				require.JSONEq(t, maskApprovalIDs(f.response), maskApprovalIDs(got), "%s (%s): %s", f.name, proto, f.comment)

				// Hidden ≡ absent: the same params with a name no row has.
				if strings.Contains(f.response, "Unknown tool") {
					absent := f.params
					absent.Name = "noSuchToolAnywhere"
					want := strings.ReplaceAll(got, "'"+f.params.Name+"'", "'noSuchToolAnywhere'")
					require.Equal(t, want, call(f.caller, absent), "%s (%s): hidden and absent differ", f.name, proto)
				}
			}
			// tools/list shows what the fixtures call granted, and nothing
			// they found hidden.
			for _, f := range fixtures {
				list, err := session(f.caller).ListTools(ctx, nil)
				require.NoError(t, err)
				var names []string
				for _, tl := range list.Tools {
					names = append(names, tl.Name)
				}
				if f.caller == nil {
					require.Empty(t, names, "nobody sees nothing (%s)", proto)
					continue
				}
				if strings.Contains(f.response, "Unknown tool") {
					require.NotContains(t, names, f.params.Name, "%s (%s): a hidden tool is listed", f.name, proto)
				} else {
					require.Contains(t, names, f.params.Name, "%s (%s)", f.name, proto)
				}
			}
			require.NoError(t, g.stop(), "graceful shutdown")
		})
	}
}
