package wire

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestMiddlewareHandsOnTheWireMetaAndTakesIt(t *testing.T) {
	t.Parallel()
	sent := `{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","b":1,"a":2}`
	var p mcp.CallToolParamsRaw
	if err := json.Unmarshal(rewriteParams("tools/call", json.RawMessage(`{"name":"x","_meta":`+sent+`}`)), &p); err != nil {
		t.Fatal(err)
	}
	req := &mcp.CallToolRequest{Params: &p}
	ran := false
	_, _ = Middleware(func(ctx context.Context, _ string, req mcp.Request) (mcp.Result, error) {
		ran = true
		if got := InfoOf(ctx, req); got.Meta != sent || got.NameInvalid {
			t.Fatalf("InfoOf = %+v, want the _meta as sent", got)
		}
		if _, ok := p.Meta[Key]; ok {
			t.Fatal("the wire entry is still in _meta")
		}
		return nil, nil
	})(context.Background(), "tools/call", req)
	if !ran {
		t.Fatal("the next handler did not run")
	}
	// Without the wire layer: the decoded _meta.
	direct := &mcp.ListToolsRequest{Params: &mcp.ListToolsParams{Meta: mcp.Meta{"traceparent": "x"}}}
	if got := InfoOf(context.Background(), direct).Meta; got != `{"traceparent":"x"}` {
		t.Fatalf("InfoOf = %s", got)
	}
	if got := InfoOf(context.Background(), &mcp.ListToolsRequest{}).Meta; got != "" {
		t.Fatalf("the _meta of no params is %q", got)
	}
	if !InfoOf(context.Background(), &mcp.CallToolRequest{}).NameInvalid {
		t.Fatal("a call without params has a name")
	}
}

type otherKey struct{}

func TestInfoOfSeesThroughFurtherContexts(t *testing.T) {
	t.Parallel()
	var p mcp.CallToolParamsRaw
	if err := json.Unmarshal(rewriteParams("tools/call", json.RawMessage(`{"name":7,"_meta":{"k":1}}`)), &p); err != nil {
		t.Fatal(err)
	}
	_, _ = Middleware(func(ctx context.Context, _ string, req mcp.Request) (mcp.Result, error) {
		ctx, cancel := context.WithCancel(context.WithValue(ctx, otherKey{}, 1))
		defer cancel()
		if got := InfoOf(ctx, req); got.Meta != `{"k":1}` || got.NameInvalid {
			t.Fatalf("InfoOf = %+v", got)
		}
		return nil, nil
	})(context.Background(), "tools/call", &mcp.CallToolRequest{Params: &p})
	if p.Name != "7" {
		t.Fatalf("name %q", p.Name)
	}
}

func TestMiddlewareHandsOnAnInvalidName(t *testing.T) {
	t.Parallel()
	var p mcp.CallToolParamsRaw
	if err := json.Unmarshal(rewriteParams("tools/call", json.RawMessage(`{"name":true,"_meta":{"k":1}}`)), &p); err != nil {
		t.Fatal(err)
	}
	_, _ = Middleware(func(ctx context.Context, _ string, req mcp.Request) (mcp.Result, error) {
		if got := InfoOf(ctx, req); got.Meta != `{"k":1}` || !got.NameInvalid {
			t.Fatalf("InfoOf = %+v", got)
		}
		return nil, nil
	})(context.Background(), "tools/call", &mcp.CallToolRequest{Params: &p})
}
