// Package benchdata is what toolgate's benchmarks share: the generated
// registry, the grant policies they measure and the bare go-sdk server they
// compare against (engine's and mcpadapter's benchmarks, internal/testkit/benche2e,
// httpserve's), and the candidate policy the shadow and replay tests serve.
// One copy, so that every benchmark measures the same thing.
package benchdata

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/example/demo"
	"github.com/toolgate/toolgate/toolcall"
)

// The bundled example's grant policy in three parts, so that a variant can
// add a line to its per-row body (after grantRows) or to its condition on
// the caller (after grantCaller).
const (
	grantRows = `package toolgate.grant

granted := {t.name |
	some t in input.tools
	t.base
	t.annotations.readOnlyHint == true
	not url_driver(t)
`
	grantCaller = `} if {
	"contractor" in input.caller.roles
`
	grantEnd = `}

url_driver(t) if t.driver == "url"
`
)

// Memoised is the bundled example's grant policy: it reads the caller's
// roles and the rows only, so its decisions are memoised per caller.
const Memoised = grantRows + grantCaller + grantEnd

// ManagersLosePrice is the bundled grant policy with one override more:
// managers lose the tool price. The shadow and replay tests serve it as the
// candidate beside the bundled policy, which it differs from in exactly that.
const ManagersLosePrice = Memoised + `
granted := {t.name | some t in input.tools; t.base; t.name != "price"} if {
	"manager" in input.caller.roles
	not "contractor" in input.caller.roles
}

url_drivers_decided := true
`

// ReadsMeta is Memoised with an opt-out in _meta: it reads input.request,
// outside the per-row body.
const ReadsMeta = grantRows + grantCaller + "\tnot input.request.meta[\"festi/all\"] == true\n" + grantEnd

// ReadsMetaPerRow is Memoised whose per-row body reads the request: a
// caller may hide a tool by naming it in _meta.
const ReadsMetaPerRow = grantRows + "\tnot input.request.meta[\"festi/hide\"] == t.name\n" + grantCaller + grantEnd

// Registry generates a registry (YAML) of n rows: "echo" (demo.echo,
// read-only) first, then rows without a section, in a section for managers
// and in one for admins, half of them read-only, one in fifty a URL driver.
// With described, every generated row has a description.
func Registry(n int, described bool) string {
	var b strings.Builder
	b.WriteString("sections:\n  rewards: { roles: [manager, admin] }\n  reports: { roles: [admin] }\ntools:\n")
	b.WriteString("  - { name: echo, method: demo.echo, arguments: [{ name: text, type: string, required: true }], annotations: { readOnlyHint: true } }\n")
	for i := 1; i < n; i++ {
		section := []string{"", "rewards", "reports"}[i%3]
		fmt.Fprintf(&b, "  - name: tool%d\n    method: demo.echo\n", i)
		if described {
			fmt.Fprintf(&b, "    description: Generated row %d.\n", i)
		}
		if section != "" {
			fmt.Fprintf(&b, "    section: %s\n", section)
		}
		if i%50 == 0 {
			b.WriteString("    driver: url\n")
		}
		fmt.Fprintf(&b, "    arguments: [{ name: text, type: string, required: true }]\n    annotations: { readOnlyHint: %t }\n", i%2 == 0)
	}
	return b.String()
}

// BareServer is a plain go-sdk server whose echo tool, added with
// mcp.AddTool, runs toolgate's demo.echo method: the registry's echo row,
// ungoverned.
func BareServer() *mcp.Server {
	echo, _ := demo.Methods().Method("demo.echo")
	s := mcp.NewServer(&mcp.Implementation{Name: "bare", Version: "bench"}, nil)
	type args struct {
		Text string `json:"text"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(ctx context.Context, _ *mcp.CallToolRequest, in args) (*mcp.CallToolResult, any, error) {
		text, _ := json.Marshal(in.Text)
		inv, err := echo.Bind([]toolcall.Arg{{Name: "text", Value: text}})
		if err != nil {
			return nil, nil, err
		}
		res, err := inv(ctx)
		return res, nil, err
	})
	return s
}

// MinimalServer is the floor of a go-sdk server with the same echo tool:
// a raw Server.AddTool handler that decodes its arguments itself, without
// the typed handler's schema validation (BareServer has it).
func MinimalServer() *mcp.Server {
	echo, _ := demo.Methods().Method("demo.echo")
	s := mcp.NewServer(&mcp.Implementation{Name: "minimal", Version: "bench"}, nil)
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in struct {
			Text json.RawMessage `json:"text"`
		}
		if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
			return nil, err
		}
		inv, err := echo.Bind([]toolcall.Arg{{Name: "text", Value: in.Text}})
		if err != nil {
			return nil, err
		}
		return inv(ctx)
	})
	return s
}

// BareHTTP serves s over streamable HTTP as httpserve dispatches: the SDK's
// stateful handler with its defaults, and its stateless one for the
// requests of a sessionless revision (2026-07-28 on, named in their
// Mcp-Protocol-Version header, without a session id), so that bare and
// governed serve each revision the same way.
func BareHTTP(s *mcp.Server) http.Handler {
	get := func(*http.Request) *mcp.Server { return s }
	stateful := mcp.NewStreamableHTTPHandler(get, nil)
	sessionless := mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{Stateless: true})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Protocol-Version") >= "2026-07-28" && r.Header.Get("Mcp-Session-Id") == "" {
			sessionless.ServeHTTP(w, r)
			return
		}
		stateful.ServeHTTP(w, r)
	})
}

// LiveHeap is the live heap after a full collection, twice over: the
// cleanups of the first (the engine's weak canonical entries) free more in
// the second.
func LiveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
