package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/internal/inspect"
	"github.com/toolgate/toolgate/internal/server/console"
	"github.com/toolgate/toolgate/toolcall"
)

// The console over the bundled example, asked for one cell of the matrix
// the way the page asks: a contractor does not see getReward, and the
// policy's rule says so.
func Example() {
	ctx := context.Background()
	eng, err := engine.New(ctx, toolgate.Source("", ""))
	if err != nil {
		panic(err)
	}
	c := console.New(console.Options{
		// A real server reads the caller from the request's bearer token.
		Auth: func(*http.Request) (*toolcall.Caller, bool) {
			return &toolcall.Caller{Subject: "olga", Roles: []string{"admin"}}, true
		},
		Explainer: console.ExplainerFunc(func(ctx context.Context, c *toolcall.Caller, tool string, meta json.RawMessage) *inspect.Explanation {
			return inspect.Explain(ctx, inspect.ExplainOptions{Revision: eng.Current(), Caller: c, Tool: tool, Meta: meta})
		}),
	})
	w := httptest.NewRecorder()
	c.ServeHTTP(w, httptest.NewRequest("POST", "/console/api/explain",
		strings.NewReader(`{"caller": {"subject": "carl", "roles": ["contractor"]}, "tool": "getReward"}`)))
	var x console.CellExplanation
	if err := json.Unmarshal(w.Body.Bytes(), &x); err != nil {
		panic(err)
	}
	fmt.Println(x.Call.Stage)
	fmt.Println(x.Call.Answer)
	fmt.Println(x.Call.DecidedBy, x.Call.Rules[0].File)
	// Output:
	// unknown_tool
	// Error: Unknown tool 'getReward'.
	// the policy's granted set does not name it rego/grant.rego
}
