package authzen_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/example/demo"
	"github.com/toolgate/toolgate/internal/server/authzen"
	"github.com/toolgate/toolgate/toolcall"
)

// FuzzEvaluation sends any body to both endpoints as a caller with the PDP
// role: the answer is 200 with a boolean decision (or a list of them),
// 400, or 413 for a body beyond the bounds; never a panic, never another
// status. The same body asked about a name no row has and about a row
// the subject cannot see answers alike.
func FuzzEvaluation(f *testing.F) {
	eng, err := engine.New(context.Background(), toolgate.Source("", ""))
	if err != nil {
		f.Fatal(err)
	}
	pep := &toolcall.Caller{Subject: "pep", Roles: []string{"pdp"}}
	mux := http.NewServeMux()
	for p, h := range authzen.Routes(authzen.Options{Revisions: eng, Methods: demo.Methods(),
		Caller: func(*http.Request) *toolcall.Caller { return pep }, PDPRoles: []string{"pdp"}, AdminRole: "admin"}) {
		mux.Handle(p, h)
	}
	for _, s := range []string{
		`{"subject":{"type":"user","id":"nora","properties":{"roles":[]}},"action":{"name":"tools/call"},"resource":{"type":"mcp_tool","id":"getReward"}}`,
		`{"subject":{"type":"user","id":"max","properties":{"roles":["manager"],"claims":{"n":1e999999}}},"action":{"name":"tools/call"},"resource":{"type":"mcp_tool","id":"getReward","properties":{"arguments":{"idReward":7},"meta":{"a":[[[[1]]]]}}}}`,
		`{"subject":{"type":"user","id":"a"},"action":{"name":"tools/list"},"evaluations":[{"resource":{"type":"mcp_tool","id":"echo"}},{}],"options":{"evaluations_semantic":"permit_on_first_permit"}}`,
		`{"subject":{"type":"user","id":"a","properties":{"roles":["admin"]}},"action":{"name":"prompts/get"},"resource":{"type":"mcp_prompt","id":"p","properties":{"arguments":{"x":"1"}}}}`,
		`{"subject":{"type":"user","id":"a","properties":{"roles":["admin"]}},"action":{"name":"resources/read"},"resource":{"type":"mcp_resource","id":"test://x","properties":{"meta":{}}}}`,
		`{"evaluations":[]}`, `[]`, `null`, `{"subject":{"properties":{"x":1}}}`,
	} {
		f.Add(s)
	}
	ask := func(path, body string) (int, string) {
		rr := httptest.NewRecorder()
		mux.ServeHTTP(rr, httptest.NewRequest(http.MethodPost, path, strings.NewReader(body)))
		return rr.Code, rr.Body.String()
	}
	f.Fuzz(func(t *testing.T, body string) {
		for _, path := range []string{authzen.EvaluationPath, authzen.EvaluationsPath} {
			code, out := ask(path, body)
			switch code {
			case http.StatusBadRequest:
				continue
			case http.StatusRequestEntityTooLarge:
				if len(body) > authzen.MaxEvaluationBytes {
					continue
				}
				t.Fatalf("%s: 413 for %d bytes", path, len(body))
			case http.StatusOK:
			default:
				t.Fatalf("%s: status %d: %s", path, code, out)
			}
			var v struct {
				Decision    *bool `json:"decision"`
				Evaluations []struct {
					Decision *bool `json:"decision"`
				} `json:"evaluations"`
			}
			if err := json.Unmarshal([]byte(out), &v); err != nil {
				t.Fatalf("%s: not JSON: %s", path, out)
			}
			if v.Decision == nil && v.Evaluations == nil {
				t.Fatalf("%s: no decision: %s", path, out)
			}
			for _, e := range v.Evaluations {
				if e.Decision == nil {
					t.Fatalf("%s: an evaluation without a decision: %s", path, out)
				}
			}
		}
		// Hidden is absent: getReward is hidden from a caller without
		// roles; zzNoRow is no row's name.
		if strings.Contains(body, `"getReward"`) && !strings.Contains(body, "zzNoRowX") {
			c1, hidden := ask(authzen.EvaluationPath, body)
			c2, absent := ask(authzen.EvaluationPath, strings.ReplaceAll(body, `"getReward"`, `"zzNoRowX"`))
			if c1 == http.StatusOK && c2 == http.StatusOK && strings.Contains(body, `"roles":[]`) && !strings.Contains(hidden, "getReward") && hidden != absent {
				t.Fatalf("hidden %s, absent %s", hidden, absent)
			}
		}
	})
}
