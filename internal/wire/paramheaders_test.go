package wire_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/wire"
)

const paramSchema = `{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"n":{"type":"integer","x-mcp-header":"N"}}}`

// TestParamHeaderGate checks the conformance suite's custom-header cases
// against a tool listed with x-mcp-header annotations: what the go-sdk
// server rejects gets HTTP 400 and a -32020 error, what it accepts reaches
// the server behind.
func TestParamHeaderGate(t *testing.T) {
	schema := func(_ *http.Request, name string) (json.RawMessage, bool) {
		return json.RawMessage(paramSchema), name == "geo"
	}
	cases := []struct {
		name    string
		tool    string
		args    string
		headers map[string]string
		reject  bool
	}{
		{"valid base64", "geo", `{"region":"Hello"}`, map[string]string{"Mcp-Param-Region": "=?base64?SGVsbG8=?="}, false},
		{"base64 padding missing", "geo", `{"region":"Hello"}`, map[string]string{"Mcp-Param-Region": "=?base64?SGVsbG8?="}, true},
		{"base64 bad characters", "geo", `{"region":"Hello"}`, map[string]string{"Mcp-Param-Region": "=?base64?SGVs!!!bG8=?="}, true},
		{"no prefix is literal", "geo", `{"region":"SGVsbG8="}`, map[string]string{"Mcp-Param-Region": "SGVsbG8="}, false},
		{"no suffix is literal", "geo", `{"region":"=?base64?SGVsbG8="}`, map[string]string{"Mcp-Param-Region": "=?base64?SGVsbG8="}, false},
		{"header missing", "geo", `{"region":"test-value"}`, nil, true},
		{"header mismatch", "geo", `{"region":"a"}`, map[string]string{"Mcp-Param-Region": "b"}, true},
		{"header for absent argument", "geo", `{}`, map[string]string{"Mcp-Param-Region": "b"}, true},
		{"integer matches", "geo", `{"n":42}`, map[string]string{"Mcp-Param-N": "42"}, false},
		{"integer mismatch", "geo", `{"n":42}`, map[string]string{"Mcp-Param-N": "43"}, true},
		{"unlisted tool", "other", `{"region":"a"}`, nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			reached := false
			h := wire.ParamHeaderGate(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				reached = true
				b, _ := io.ReadAll(r.Body)
				if !strings.Contains(string(b), `"tools/call"`) {
					t.Errorf("body not passed on whole: %s", b)
				}
			}), schema)
			body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"` + c.tool + `","arguments":` + c.args + `}}`
			req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
			req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
			req.Header.Set("Mcp-Method", "tools/call")
			req.Header.Set("Mcp-Name", c.tool)
			for k, v := range c.headers {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if !c.reject {
				if !reached || rec.Code != http.StatusOK {
					t.Fatalf("accepted request not served: reached=%v status=%d %s", reached, rec.Code, rec.Body)
				}
				return
			}
			if reached {
				t.Fatal("rejected request reached the server behind")
			}
			if rec.Code != http.StatusBadRequest {
				t.Fatalf("status %d, want 400", rec.Code)
			}
			var resp struct {
				ID    int `json:"id"`
				Error struct {
					Code int `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil {
				t.Fatal(err)
			}
			if resp.ID != 7 || resp.Error.Code != -32020 {
				t.Fatalf("answer %s, want id 7 and code -32020", rec.Body)
			}
		})
	}
}

// TestParamHeaderGateOlderRevision checks that a request of a revision
// before 2026-07-28 is not checked.
func TestParamHeaderGateOlderRevision(t *testing.T) {
	reached := false
	h := wire.ParamHeaderGate(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached = true }),
		func(*http.Request, string) (json.RawMessage, bool) { return json.RawMessage(paramSchema), true })
	req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"geo","arguments":{"region":"a"}}}`))
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set("Mcp-Method", "tools/call")
	h.ServeHTTP(httptest.NewRecorder(), req)
	if !reached {
		t.Fatal("older revision request was checked")
	}
}

// TestParamHeaders checks the headers made for a call as the go-sdk
// client makes them: plain ASCII as is, integers and booleans in their
// canonical form, other strings Base64-wrapped, absent or null arguments
// and non-primitive values without a header; and that they pass the check.
func TestParamHeaders(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"A"},"b":{"type":"string","x-mcp-header":"B"},"n":{"type":"integer","x-mcp-header":"N"},"f":{"type":"boolean","x-mcp-header":"F"},"z":{"type":"string","x-mcp-header":"Z"}}}`)
	args := json.RawMessage(`{"a":"plain","b":"héllo","n":7,"f":false,"z":null}`)
	got := wire.ParamHeaders(schema, args)
	want := map[string]string{"Mcp-Param-A": "plain", "Mcp-Param-B": "=?base64?aMOpbGxv?=", "Mcp-Param-N": "7", "Mcp-Param-F": "false"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	h := http.Header{}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
		h.Set(k, got[k])
	}
	if err := wire.CheckParamHeaders(h, schema, args); err != nil {
		t.Fatalf("made headers fail the check: %v", err)
	}
}
