package wire

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestRawMetaReadsTheWireMetaWithoutTakingIt(t *testing.T) {
	t.Parallel()
	sent := `{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","b":1,"a":2}`
	var p mcp.CallToolParamsRaw
	if err := json.Unmarshal(rewriteParams("tools/call", json.RawMessage(`{"name":"x","_meta":`+sent+`}`)), &p); err != nil {
		t.Fatal(err)
	}
	req := &mcp.CallToolRequest{Params: &p}
	if got := string(RawMeta(req)); got != sent {
		t.Fatalf("RawMeta = %s, want %s", got, sent)
	}
	if w, ok := Take(p.Meta); !ok || w.Meta != sent {
		t.Fatalf("the wire entry was taken: %v %q", ok, w.Meta)
	}
	// Without the wire layer: the decoded _meta.
	direct := &mcp.ListToolsRequest{Params: &mcp.ListToolsParams{Meta: mcp.Meta{"traceparent": "x"}}}
	if got := string(RawMeta(direct)); got != `{"traceparent":"x"}` {
		t.Fatalf("RawMeta = %s", got)
	}
	if RawMeta(&mcp.ListToolsRequest{}) != nil {
		t.Fatal("RawMeta of no params is not nil")
	}
}
