package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/testkit/mcptest"
	"github.com/toolgate/toolgate/toolcall"
	"github.com/toolgate/toolgate/upstream"
)

// sentAnswers are the results the raw upstream sends, as it spells them:
// members no SDK type holds, isError false, _meta, and <, > and & left
// as they are (a go-sdk server would write them as \u003c, \u003e,
// \u0026).
var sentAnswers = map[string]string{
	"tools/call":          `{"content":[{"type":"text","text":"a<b>&c","x-item":1}],"structuredContent":{"k<":"v&>"},"isError":false,"_meta":{"m&":"<v>"},"x-unknown":{"a":[1,2]}}`,
	"prompts/get":         `{"description":"d<>&","messages":[{"role":"user","content":{"type":"text","text":"<p>&"}}],"x-unknown":true,"_meta":{"a":"<&>"}}`,
	"resources/read":      `{"contents":[{"uri":"demo://a","mimeType":"text/plain","text":"<r>&"}],"x-unknown":1}`,
	"completion/complete": `{"completion":{"values":["<a>","&b"],"total":2,"hasMore":false},"x-unknown":1}`,
}

// rawUpstream is an MCP server over streamable HTTP written by hand (JSON
// responses, no session): it answers what sentAnswers says byte for byte,
// and lists one tool, one prompt (an argument with required false) and
// one resource.
func rawUpstream(t *testing.T) string {
	t.Helper()
	return rawUpstreamWith(t, nil, nil)
}

// rawUpstreamWith is rawUpstream answering the methods of answers (a
// result each, as sent) and of errs (a JSON-RPC error object each, as
// sent) as they say instead.
func rawUpstreamWith(t *testing.T, answers, errs map[string]string) string {
	t.Helper()
	own := map[string]string{
		"tools/list":               `{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}`,
		"prompts/list":             `{"prompts":[{"name":"greet","arguments":[{"name":"who","required":false}]}]}`,
		"resources/list":           `{"resources":[{"uri":"demo://a","name":"a"}]}`,
		"resources/templates/list": `{"resourceTemplates":[]}`,
		"ping":                     `{}`,
		"logging/setLevel":         `{}`,
	}
	for k, v := range sentAnswers {
		own[k] = v
	}
	for k, v := range answers {
		own[k] = v
	}
	answers = own
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"params"`
		}
		if err := json.NewDecoder(r.Body).Decode(&msg); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		if len(msg.ID) == 0 {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		var body string
		rpcErr, failed := errs[msg.Method]
		switch result, ok := answers[msg.Method]; {
		case failed:
			body = `{"jsonrpc":"2.0","id":` + string(msg.ID) + `,"error":` + rpcErr + `}`
		case msg.Method == "initialize":
			v := msg.Params.ProtocolVersion
			if v == "" {
				v = "2025-11-25"
			}
			body = `{"jsonrpc":"2.0","id":` + string(msg.ID) + `,"result":{"protocolVersion":"` + v + `","capabilities":{"tools":{},"prompts":{},"resources":{},"completions":{}},"serverInfo":{"name":"raw","version":"0"}}}`
		case ok:
			body = `{"jsonrpc":"2.0","id":` + string(msg.ID) + `,"result":` + result + `}`
		default:
			body = `{"jsonrpc":"2.0","id":` + string(msg.ID) + `,"error":{"code":-32601,"message":"method not found"}}`
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(ts.Close)
	return ts.URL
}

// responses records the bodies of the HTTP responses a client reads.
type responses struct {
	next http.RoundTripper
	mu   sync.Mutex
	got  []byte
	// streams are the bodies of the event streams read.
	streams []string
}

func (rr *responses) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := rr.next.RoundTrip(r)
	if err != nil {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	rr.mu.Lock()
	rr.got = append(rr.got, body...)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		rr.streams = append(rr.streams, string(body))
	}
	rr.mu.Unlock()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

// take returns the bodies read since the last take.
func (rr *responses) take() string {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	s := string(rr.got)
	rr.got = nil
	return s
}

// resultIn is the result of the one JSON-RPC response in body (JSON or
// server-sent events) that has one.
func resultIn(t *testing.T, body string) json.RawMessage {
	t.Helper()
	for _, line := range strings.Split(body, "\n") {
		line = strings.TrimPrefix(strings.TrimSpace(line), "data: ")
		var m struct {
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal([]byte(line), &m) == nil && len(m.Result) > 0 {
			return m.Result
		}
	}
	t.Fatalf("no result in %q", body)
	return nil
}

// TestAnswersAsSent (docs/contract.md §19, "Answers as sent"): through
// the gateway, what an upstream answers a tools/call, prompts/get,
// resources/read and completion/complete reaches the client as the
// upstream sent it — unknown members, isError false and _meta kept, <, >
// and & in the upstream's spelling, nothing added on 2025 revisions (no
// ttlMs or cacheScope) — and on 2026-07-28 with resultType added. A
// prompt's argument listed with required false keeps it.
func TestAnswersAsSent(t *testing.T) {
	t.Parallel()
	upURL := rawUpstream(t)
	ann := &toolcall.Caller{Subject: "ann", Roles: []string{"admin"}}
	g := importGateway{callers: []*toolcall.Caller{ann},
		ups: []upstream.Settings{{Name: "up", URL: upURL, Import: true}}}.start(t)
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			cs, rec := recorded(t, g.url, proto, ann)
			ctx := context.Background()

			prompts, err := cs.ListPrompts(ctx, nil)
			require.NoError(t, err)
			listed := resultIn(t, rec.take())
			assert.Contains(t, string(listed), `{"name":"who","required":false}`, "the prompt's argument as listed")
			require.Len(t, prompts.Prompts, 1)

			requests := map[string]func() error{
				"tools/call": func() error {
					_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up.echo", Arguments: map[string]any{}})
					return err
				},
				"prompts/get": func() error {
					_, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: prompts.Prompts[0].Name})
					return err
				},
				"resources/read": func() error {
					_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "demo://a"})
					return err
				},
				"completion/complete": func() error {
					_, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: prompts.Prompts[0].Name},
						Argument: mcp.CompleteParamsArgument{Name: "who", Value: ""}})
					return err
				},
			}
			for method, send := range requests {
				require.NoError(t, send(), method)
				body := rec.take()
				got := resultIn(t, body)
				want := sentAnswers[method]
				if proto < "2026-07-28" {
					assert.Equal(t, want, string(got), "%s: the result as the upstream sent it", method)
					continue
				}
				var gotV, wantV map[string]any
				require.NoError(t, json.Unmarshal(got, &gotV))
				require.NoError(t, json.Unmarshal([]byte(want), &wantV))
				assert.Equal(t, "complete", gotV["resultType"], "%s: resultType on 2026-07-28", method)
				delete(gotV, "resultType")
				if meta, ok := gotV["_meta"].(map[string]any); ok {
					delete(meta, mcp.MetaKeyServerInfo)
					if len(meta) == 0 {
						delete(gotV, "_meta")
					}
				}
				assert.Equal(t, wantV, gotV, "%s: the result as the upstream sent it, and resultType", method)
				for _, esc := range []string{`\u003c`, `\u003e`, `\u0026`} {
					assert.NotContains(t, string(got), esc, "%s: <, > and & as sent", method)
				}
			}
		})
	}
}

// TestRedactedAnswersKeepWhatWasSent (docs/contract.md §18, §19): a
// result the result rules redact reaches the client with every member the
// upstream sent (unknown ones, isError false, _meta) and <, > and & as
// they were, only the matches replaced — for a tools/call and a
// resources/read.
func TestRedactedAnswersKeepWhatWasSent(t *testing.T) {
	t.Parallel()
	upURL := rawUpstream(t)
	ann := &toolcall.Caller{Subject: "ann", Roles: []string{"admin"}}
	g := importGateway{callers: []*toolcall.Caller{ann}, policy: map[string]string{"result.rego": "package toolgate.result\n\nredact contains `v&>|<r>`\n"},
		ups: []upstream.Settings{{Name: "up", URL: upURL, Import: true}}}.start(t)
	cs, rec := recorded(t, g.url, "2025-11-25", ann)
	ctx := context.Background()

	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up.echo", Arguments: map[string]any{}})
	require.NoError(t, err)
	got := resultIn(t, rec.take())
	assert.JSONEq(t, `{"content":[{"type":"text","text":"a<b>&c","x-item":1}],"structuredContent":{"k<":"[redacted]"},"isError":false,"_meta":{"m&":"<v>"},"x-unknown":{"a":[1,2]}}`, string(got))
	_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "demo://a"})
	require.NoError(t, err)
	read := resultIn(t, rec.take())
	assert.JSONEq(t, `{"contents":[{"uri":"demo://a","mimeType":"text/plain","text":"[redacted]&"}],"x-unknown":1}`, string(read))
	for _, esc := range []string{`\u003c`, `\u003e`, `\u0026`} {
		assert.NotContains(t, string(got)+string(read), esc, "<, > and & as sent")
	}
}

// TestInputResponsesNotAnObject (docs/contract.md §19, "2026-07-28"): a
// tools/call of the 2026-07-28 revision whose inputResponses is not an
// object (null, a number, a string, an array) is answered with a JSON-RPC
// invalid params error, not run; on an earlier revision, which defines no
// inputResponses, the member is ignored.
func TestInputResponsesNotAnObject(t *testing.T) {
	t.Parallel()
	upURL := rawUpstream(t)
	ann := &toolcall.Caller{Subject: "ann", Roles: []string{"admin"}}
	g := importGateway{callers: []*toolcall.Caller{ann},
		ups: []upstream.Settings{{Name: "up", URL: upURL, Import: true}}}.start(t)
	for _, proto := range []string{"2025-11-25", "2026-07-28"} {
		for _, v := range []string{`null`, `5`, `"x"`, `[]`} {
			t.Run(proto+"/"+v, func(t *testing.T) {
				tr := &http.Transport{}
				t.Cleanup(tr.CloseIdleConnections)
				client := mcp.NewClient(&mcp.Implementation{Name: "mrtr-test", Version: "1"}, nil)
				cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: g.url, DisableStandaloneSSE: true,
					HTTPClient: &http.Client{Transport: rewriting{next: mcptest.Bearer{Token: tokenFor(ann), Next: tr}, edit: func(s string) string {
						return strings.Replace(s, `"arguments":{}`, `"arguments":{},"inputResponses":`+v, 1)
					}}}}, &mcp.ClientSessionOptions{ProtocolVersion: proto})
				require.NoError(t, err)
				t.Cleanup(func() { _ = cs.Close() })
				res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "up.echo", Arguments: map[string]any{}})
				if proto < "2026-07-28" {
					require.NoError(t, err)
					assert.False(t, res.IsError)
					return
				}
				var rpcErr *jsonrpc.Error
				require.ErrorAs(t, err, &rpcErr)
				assert.Equal(t, int64(jsonrpc.CodeInvalidParams), rpcErr.Code)
			})
		}
	}
}

// TestEventStreamsCarryRetry (docs/contract.md §19, "2026-07-28"): every
// server-sent event stream the gateway answers opens with the SSE retry
// field, on each revision.
func TestEventStreamsCarryRetry(t *testing.T) {
	t.Parallel()
	upURL := rawUpstream(t)
	ann := &toolcall.Caller{Subject: "ann", Roles: []string{"admin"}}
	g := importGateway{callers: []*toolcall.Caller{ann},
		ups: []upstream.Settings{{Name: "up", URL: upURL, Import: true}}}.start(t)
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			cs, rec := recorded(t, g.url, proto, ann)
			_, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "up.echo", Arguments: map[string]any{}})
			require.NoError(t, err)
			rec.mu.Lock()
			defer rec.mu.Unlock()
			require.NotEmpty(t, rec.streams, "the gateway answers with event streams")
			for _, s := range rec.streams {
				assert.True(t, strings.HasPrefix(s, "retry: "), "an event stream opens with the retry field: %q", s)
			}
		})
	}
}

// TestOwnAnswersCarryResultType (docs/contract.md §19): on 2026-07-28 a
// tools/call result of toolgate's own (here the unknown-tool answer) has
// resultType too; on an earlier revision it has none.
func TestOwnAnswersCarryResultType(t *testing.T) {
	t.Parallel()
	ann := &toolcall.Caller{Subject: "ann", Roles: []string{"admin"}}
	g := importGateway{callers: []*toolcall.Caller{ann}}.start(t)
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			cs, rec := recorded(t, g.url, proto, ann)
			_, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "nope", Arguments: map[string]any{}})
			require.NoError(t, err)
			var got map[string]any
			require.NoError(t, json.Unmarshal(resultIn(t, rec.take()), &got))
			if proto < "2026-07-28" {
				assert.NotContains(t, got, "resultType")
				return
			}
			assert.Equal(t, "complete", got["resultType"])
		})
	}
}
