package backend

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Answers as sent (docs/contract.md §19): what an upstream answers a
// granted tools/call, prompts/get, resources/read or completion/complete
// reaches the client as the upstream sent it. The SDK's typed results
// cannot carry that: the upstream's Catalog and methods hand the raw JSON
// of a result over with KeepSent, into the Sent of the request the
// adapter serves.

type sentKey struct{}

// Sent is the raw JSON of the result a request got from upstream, and
// the upstream's answerable JSON-RPC error of a call that failed.
type Sent struct {
	mu  sync.Mutex
	res any // the typed result it is the JSON of (a pointer)
	raw json.RawMessage
	// failed is the result a call that failed with the upstream's
	// answerable error rpcErr ended with (KeepRPCError).
	failed *mcp.CallToolResult
	rpcErr *jsonrpc.Error
}

// WithSent marks ctx, a request's, so that KeepSent records in the
// returned Sent.
func WithSent(ctx context.Context) (context.Context, *Sent) {
	s := &Sent{}
	return context.WithValue(ctx, sentKey{}, s), s
}

func sentOf(ctx context.Context) *Sent {
	s, _ := ctx.Value(sentKey{}).(*Sent)
	return s
}

// KeepSent records raw as the JSON, as its upstream sent it, of res (a
// pointer to an SDK result: *mcp.CallToolResult, *mcp.GetPromptResult,
// *mcp.ReadResourceResult or *mcp.CompleteResult) for the request ctx
// serves: when the adapter answers that same res, unchanged, it answers
// raw. Outside a request the adapter serves it does nothing. raw must be
// a JSON object; it is not modified and must not be afterwards.
func KeepSent(ctx context.Context, res any, raw json.RawMessage) {
	s := sentOf(ctx)
	if s == nil || !isPointer(res) {
		return
	}
	s.mu.Lock()
	s.res, s.raw = res, raw
	s.mu.Unlock()
}

// SentFor is the raw JSON KeepSent recorded for res in ctx's request; nil
// when none (or for another result).
func SentFor(ctx context.Context, res any) json.RawMessage {
	s := sentOf(ctx)
	if s == nil || !isPointer(res) {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.res != res {
		return nil
	}
	return s.raw
}

// KeepRPCError records, for the request ctx serves, that the call ending
// with failed failed with err: when err is the upstream's JSON-RPC error
// MissingRequiredClientCapability, the client is answered that error, as
// the upstream answered it, and not the generic internal error (the
// client did not declare a capability the tool needs: its own request
// must change, and on HTTP the answer is 400).
func KeepRPCError(ctx context.Context, failed *mcp.CallToolResult, err error) {
	s := sentOf(ctx)
	if s == nil || failed == nil {
		return
	}
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != mcp.CodeMissingRequiredClientCapabilities {
		return
	}
	s.mu.Lock()
	s.failed, s.rpcErr = failed, &jsonrpc.Error{Code: rpcErr.Code, Message: rpcErr.Message, Data: rpcErr.Data}
	s.mu.Unlock()
}

// RPCErrorFor is the error KeepRPCError recorded for res in ctx's
// request; nil when none (or for another result: the call's result was
// replaced after it failed).
func RPCErrorFor(ctx context.Context, res *mcp.CallToolResult) error {
	s := sentOf(ctx)
	if s == nil || res == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed != res || s.rpcErr == nil {
		return nil
	}
	return s.rpcErr
}

// isPointer reports whether v is a pointer (a result KeepSent and SentFor
// compare by identity; nothing else compares safely).
func isPointer(v any) bool {
	return v != nil && reflect.TypeOf(v).Kind() == reflect.Pointer
}
