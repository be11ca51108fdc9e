package ledger

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"

	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/methods"
	"github.com/toolgate/toolgate/toolcall"
)

type sourceKey struct{}

// TestStoredResultsNeverReplayAcrossSources: the tokens file's "alice"
// and the issuer's "alice" send the same idempotency key: each runs the
// call once and is answered its own stored result, never the other's.
func TestStoredResultsNeverReplayAcrossSources(t *testing.T) {
	t.Parallel()
	e := countEngine(t, "package toolgate.call\n")
	for _, kind := range storeKinds {
		t.Run(kind.name, func(t *testing.T) {
			var runs atomic.Int32
			methods := methods.Map{}
			methods.Register("demo.count", func(_ context.Context, a struct {
				Key string `json:"key"`
			}) (string, error) {
				return fmt.Sprintf("run %d", runs.Add(1)), nil
			})
			s, _ := kind.open(t)
			a := mcpadapter.New(mcpadapter.Options{Revisions: e, Methods: methods,
				Caller: func(ctx context.Context, _ mcp.Request) (*toolcall.Caller, string) {
					return &toolcall.Caller{Subject: "alice"}, ctx.Value(sourceKey{}).(string)
				}})
			a.AddHook(New(s, Options{}).Hook())
			key := mcp.Meta{"festi/idempotencyKey": "order-" + newToken()}
			callAs := func(source string) string {
				ctx := context.WithValue(context.Background(), sourceKey{}, source)
				res := a.Call(ctx, &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "count", Arguments: json.RawMessage(`{"key":"k"}`), Meta: key}})
				return res.Content[0].(*mcp.TextContent).Text
			}
			first := callAs("token")
			second := callAs("jwt")
			assert.NotEqual(t, first, second, "the issuer's alice ran her own call")
			assert.Equal(t, first, callAs("token"), "a replay to the same caller")
			assert.Equal(t, second, callAs("jwt"))
			assert.EqualValues(t, 2, runs.Load())
		})
	}
}
