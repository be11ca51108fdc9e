package mcpadapter_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/hooks/ledger"
	"github.com/toolgate/toolgate/internal/canon"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/methods"
	"github.com/toolgate/toolgate/store"
	"github.com/toolgate/toolgate/toolcall"
)

// structuredRow is a tool whose method returns text, an image and
// structuredContent, for the result rules.
const structuredRow = `
  - name: report
    method: test.report
    arguments:
      - { name: text, type: string, required: true }
`

func reportMethods(t testing.TB) methods.Map {
	m := methods.Map{}
	m.Register("test.report", func(_ context.Context, a struct {
		Text string `json:"text"`
	}) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{
			Content: []mcp.Content{
				&mcp.TextContent{Text: a.Text},
				&mcp.ImageContent{Data: []byte{1, 2, 3}, MIMEType: "image/png"},
			},
			StructuredContent: map[string]any{
				"text":   a.Text,
				"nested": []any{a.Text, json.Number("12345678901234567890"), true},
				a.Text:   "a key is read too",
			},
		}, nil
	})
	return m
}

func reportSetup(policies map[string]string) setup {
	return setup{
		caller:   maxCaller,
		registry: string(toolgate.ExampleRegistry()) + structuredRow,
		methods:  reportMethods(nil),
		policies: policies,
	}
}

// TestResultRedacted (docs/contract.md §18): every match of a redact pattern in
// text content and in string values of structuredContent becomes
// [redacted], byte for byte, in its keys too (a client reads them);
// numbers keep their digits, other items pass. The bundled example's patterns are constants.
func TestResultRedacted(t *testing.T) {
	t.Parallel()
	g := newGoverned(t, reportSetup(nil))
	c := g.connectRaw(t, proto20250618)
	got := c.call(`{"name":"report","arguments":{"text":"key AKIAIOSFODNN7EXAMPLE and AKIAIOSFODNN7EXAMPLE"}}`)
	assert.Equal(t, `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"key [redacted] and [redacted]"},{"type":"image","mimeType":"image/png","data":"AQID"}],`+
		`"structuredContent":{"key [redacted] and [redacted]":"a key is read too","nested":["key [redacted] and [redacted]",12345678901234567890,true],"text":"key [redacted] and [redacted]"}}}`,
		string(got))
	end := g.after.lastEnd(t)
	assert.Equal(t, toolcall.OutcomeResult, end.Outcome)
	assert.True(t, end.Redacted)
	assert.Equal(t, "key [redacted] and [redacted]", hooks.ResultText(end.Result), "after hooks see the result as the caller gets it")

	// Nothing to redact: the result as the method returned it.
	got = c.call(`{"name":"echo","arguments":{"text":"plain"}}`)
	assert.Equal(t, `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"plain"}]}}`, string(got))
}

// TestResultWithheld: a deny reason withholds the result: `Error: The result
// was withheld: <reasons joined by "; ">.`, isError, outcome withheld; the
// rules read input.result beside the call's input.
func TestResultWithheld(t *testing.T) {
	t.Parallel()
	g := newGoverned(t, reportSetup(map[string]string{"withhold.rego": `package toolgate.result

deny contains "it names a secret" if {
	some item in input.result.content
	item.type == "text"
	contains(item.text, "secret")
}

deny contains sprintf("%s may not see images", [input.caller.subject]) if {
	some item in input.result.content
	item.mimeType == "image/png"
	input.tool.name == "report"
	input.request.arguments.text == "secret"
}
`}))
	c := g.connectRaw(t, proto20250618)
	got := c.call(`{"name":"report","arguments":{"text":"secret"}}`)
	assert.Equal(t, `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"Error: The result was withheld: it names a secret; max may not see images."}],"isError":true}}`, string(got))
	end := g.after.lastEnd(t)
	assert.Equal(t, toolcall.OutcomeWithheld, end.Outcome)
	assert.Equal(t, toolcall.StageWithheld, end.Stage)
	assert.Equal(t, []string{"it names a secret", "max may not see images"}, end.Reasons())
	require.Len(t, end.Denials, 2)
	assert.NotEmpty(t, end.Denials[0].Rules)
	// The bundled example's own: a private key.
	got = c.call(`{"name":"echo","arguments":{"text":"-----BEGIN PRIVATE KEY-----\nMII"}}`)
	assert.Equal(t, `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"Error: The result was withheld: it holds a private key."}],"isError":true}}`, string(got))
}

// TestResultRulesFailClosed: a result over 1 MiB of text, a failing
// evaluation, a pattern computed per call that does not compile: the
// result is withheld with the internal-error answer.
func TestResultRulesFailClosed(t *testing.T) {
	t.Parallel()
	internal := `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"Error: An internal error occurred while executing the tool."}],"isError":true}}`
	cases := []struct {
		name     string
		policies map[string]string
		text     string
		err      string
	}{
		{"over 1 MiB of text", nil, strings.Repeat("x", mcpadapter.MaxResultText+1), "more than 1048576 bytes"},
		{"structuredContent counts", nil, strings.Repeat("x", mcpadapter.MaxResultText/2), "more than 1048576 bytes"},
		{"a conflict", map[string]string{"result.rego": "", "bad.rego": "package toolgate.result\n\ndeny := {\"a\"} if input.result\n\ndeny := {\"b\"} if input.result\n"}, "hi", "data.toolgate.result.deny"},
		{"a built-in error", map[string]string{"bad.rego": "package toolgate.result\n\ndeny contains \"x\" if to_number(input.result.content[0].text) > 1\n"}, "hi", "builtin_error"},
		{"a deny that is not a set", map[string]string{"result.rego": "", "bad.rego": "package toolgate.result\n\ndeny := \"no\"\n"}, "hi", "deny must be a set"},
		{"an empty reason", map[string]string{"bad.rego": "package toolgate.result\n\ndeny contains \"\"\n"}, "hi", "must not be empty"},
		{"a computed pattern that does not compile", map[string]string{"bad.rego": "package toolgate.result\n\nredact contains input.request.arguments.text\n"}, "a(b", "invalid regular expression \"a(b\""},
		{"a pattern that is not a string", map[string]string{"bad.rego": "package toolgate.result\n\nredact contains 1\n"}, "hi", "must be a string"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := newGoverned(t, reportSetup(tc.policies))
			c := g.connectRaw(t, proto20250618)
			args, _ := json.Marshal(map[string]string{"text": tc.text})
			got := c.call(`{"name":"report","arguments":` + string(args) + `}`)
			assert.Equal(t, internal, string(got))
			end := g.after.lastEnd(t)
			assert.Equal(t, toolcall.StageResultFailed, end.Stage)
			assert.Equal(t, toolcall.OutcomeFailed, end.Outcome)
			assert.ErrorContains(t, end.Err, tc.err)
		})
	}
	t.Run("without result rules a large result passes", func(t *testing.T) {
		t.Parallel()
		g := newGoverned(t, reportSetup(map[string]string{"result.rego": ""}))
		c := g.connectRaw(t, proto20250618)
		big := strings.Repeat("x", mcpadapter.MaxResultText+1)
		res := toolResult(t, c.call(`{"name":"echo","arguments":{"text":"`+big+`"}}`))
		assert.Equal(t, big, resultText(t, res))
		assert.Nil(t, g.after.lastEnd(t).ResultDecision, "no result rule: nothing evaluated")
	})
}

// TestLedgerReplaysTheRedactedResult: the ledger stores the result as the
// caller got it, so a replayed idempotency key answers the redacted
// result (the method does not run again).
func TestLedgerReplaysTheRedactedResult(t *testing.T) {
	t.Parallel()
	st := store.NewMemoryStore()
	var stored []byte
	g := newGoverned(t, setup{caller: maxCaller, extraHooks: []hooks.Hook{ledger.New(st, ledger.Options{}).Hook(),
		{Name: "peek", After: func(_ context.Context, _ *hooks.CallContext, end *hooks.Record) error {
			stored, _ = json.Marshal(end.Result)
			return nil
		}}}})
	c := g.connectRaw(t, proto20250618)
	call := `{"name":"count","arguments":{"key":"ghp_abcdefghijklmnopqrstuvwxyz0123456789"},"_meta":{"festi/idempotencyKey":"k-1"}}`
	first := c.call(call)
	assert.Equal(t, `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"1"}]}}`, string(first))
	echo := `{"name":"echo","arguments":{"text":"token ghp_abcdefghijklmnopqrstuvwxyz0123456789"},"_meta":{"festi/idempotencyKey":"k-2"}}`
	want := `{"content":[{"type":"text","text":"token [redacted]"}]}`
	assert.Equal(t, `{"jsonrpc":"2.0","id":2,"result":`+want+`}`, string(c.call(echo)))
	assert.JSONEq(t, want, string(stored), "the after hooks (the ledger among them) saw the redacted result")
	assert.Equal(t, `{"jsonrpc":"2.0","id":3,"result":`+want+`}`, string(c.call(echo)), "replayed: the redacted result")
	assert.Equal(t, []string{"result", "result", "answered"}, g.after.outcomes())
	res, err := st.Claim(context.Background(), store.Key{Subject: ledger.Principal(hooks.SourceLocal, "max"), Tool: "echo", ID: "k-2"},
		canon.SHA256(json.RawMessage(`{"text":"token ghp_abcdefghijklmnopqrstuvwxyz0123456789"}`)), time.Now(), store.Lifetimes{})
	require.NoError(t, err)
	require.Equal(t, store.Completed, res.State)
	assert.NotContains(t, string(res.Result), "ghp_", "the store never held the credential")
}
