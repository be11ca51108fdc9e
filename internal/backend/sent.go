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
	// sentErr is the last JSON-RPC error an upstream answered a request
	// of this one with, as it sent it (KeepSentError).
	sentErr *jsonrpc.Error
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

// KeepSentError records e as a JSON-RPC error an upstream answered, as it
// sent it, a request made for the request ctx serves (docs/contract.md
// §19): a tools/call whose method fails with that error is answered with
// it (see KeepRPCError). Outside a request the adapter serves it does
// nothing. e is not modified and must not be afterwards.
func KeepSentError(ctx context.Context, e *jsonrpc.Error) {
	s := sentOf(ctx)
	if s == nil || e == nil {
		return
	}
	s.mu.Lock()
	s.sentErr = e
	s.mu.Unlock()
}

// KeepRPCError records, for the request ctx serves, that the call ending
// with failed failed with err, and decides whether the client is answered
// err rather than the generic internal error (docs/contract.md §19,
// "Answers as sent"):
//
//   - err is a JSON-RPC error an upstream answered the call with, as it
//     sent it (KeepSentError): the call was granted and reached the
//     upstream, whose answer it is. A hidden or unknown tool never gets
//     here (it is refused before any method runs), so hidden ≡ absent
//     holds. But with result rules in the policy (governed), an error's
//     message and data, which those rules cannot see, are not relayed:
//     the client gets the internal error (fail closed, as a result too
//     large to evaluate does);
//   - err is MissingRequiredClientCapability (the client did not declare
//     a capability the tool needs: its own request must change, and on
//     HTTP the answer is 400), from an upstream or a method: always.
//
// An error of toolgate's own making (a connection closing, a time-out)
// is none of these: the internal error.
func KeepRPCError(ctx context.Context, failed *mcp.CallToolResult, err error, governed bool) {
	s := sentOf(ctx)
	if s == nil || failed == nil {
		return
	}
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sent := s.sentErr
	switch {
	case rpcErr.Code == mcp.CodeMissingRequiredClientCapabilities:
		s.failed, s.rpcErr = failed, &jsonrpc.Error{Code: rpcErr.Code, Message: rpcErr.Message, Data: rpcErr.Data}
	case governed:
	case sent != nil && sent.Code == rpcErr.Code && sent.Message == rpcErr.Message:
		s.failed, s.rpcErr = failed, sent
	}
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
