package mcpadapter

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/backend"
	"github.com/toolgate/toolgate/internal/jsonx"
)

// Answers as sent (docs/contract.md §19): what an upstream answers a
// granted tools/call, prompts/get, resources/read or completion/complete
// reaches the client as the upstream sent it — every member, isError
// false, unknown members and _meta included, in the upstream's spelling —
// unless the result rules change it. The SDK's typed results cannot carry
// that: the upstream's Catalog and methods hand the raw JSON of a result
// over with KeepSent, and the adapter answers it (asSent), adding only
// what the client's revision requires (resultType on 2026-07-28).

// keepRPCError, rpcErrorFor, withSentSlot and sentFor are backend's,
// for the request the adapter serves.
var (
	keepRPCError = backend.KeepRPCError
	rpcErrorFor  = backend.RPCErrorFor
	withSentSlot = backend.WithSent
	sentFor      = backend.SentFor
)

// KeepSent records raw as the JSON, as its upstream sent it, of res (a
// pointer to an SDK result: *mcp.CallToolResult, *mcp.GetPromptResult,
// *mcp.ReadResourceResult or *mcp.CompleteResult) for the request ctx
// serves: when the adapter answers that same res, unchanged, it answers
// raw. Outside a request the adapter serves it does nothing. raw must be
// a JSON object; it is not modified and must not be afterwards.
func KeepSent(ctx context.Context, res any, raw json.RawMessage) { backend.KeepSent(ctx, res, raw) }

// asSent is a result answered as its upstream sent it (raw), with
// resultType added when the client's revision requires it and the SDK's
// own _meta entries (serverInfo on 2026-07-28) kept.
type asSent struct {
	mcp.Result
	raw      json.RawMessage
	revision string
}

func (r *asSent) MarshalJSON() ([]byte, error) {
	meta := r.Result.GetMeta()
	needType := r.revision >= multiRoundTripRevision
	if !needType && len(meta) == 0 {
		return r.raw, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(r.raw, &m); err != nil || m == nil {
		return r.raw, nil
	}
	changed := false
	if _, ok := m["resultType"]; needType && !ok {
		m["resultType"] = json.RawMessage(`"complete"`)
		changed = true
	}
	if extra := missingMeta(m["_meta"], meta); extra != nil {
		m["_meta"] = extra
		changed = true
	}
	if !changed {
		return r.raw, nil
	}
	return jsonx.Marshal(m)
}

// missingMeta is sent (a raw _meta) with the entries of meta it lacks
// added; nil when it lacks none. Only the SDK adds to a relayed result's
// _meta (the serverInfo of 2026-07-28): every other entry came from sent.
func missingMeta(sent json.RawMessage, meta map[string]any) json.RawMessage {
	if len(meta) == 0 {
		return nil
	}
	var m map[string]json.RawMessage
	if len(bytes.TrimSpace(sent)) > 0 {
		if err := json.Unmarshal(sent, &m); err != nil {
			return nil
		}
	}
	if m == nil {
		m = map[string]json.RawMessage{}
	}
	added := false
	for k, v := range meta {
		if _, ok := m[k]; ok {
			continue
		}
		b, err := jsonx.Marshal(v)
		if err != nil {
			continue
		}
		m[k], added = b, true
	}
	if !added {
		return nil
	}
	out, err := jsonx.Marshal(m)
	if err != nil {
		return nil
	}
	return out
}

// requestRevision is the protocol revision of req's client: the one its
// _meta names (2026-07-28 sends it with each request), else its session's.
func requestRevision(req mcp.Request) string {
	if p := req.GetParams(); p != nil && !reflect.ValueOf(p).IsNil() {
		if v, ok := p.GetMeta()[mcp.MetaKeyProtocolVersion].(string); ok && v != "" {
			return v
		}
	}
	if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil {
		if ip := ss.InitializeParams(); ip != nil {
			return ip.ProtocolVersion
		}
	}
	return ""
}

// answerSent is res as the client receives it: as its upstream sent it
// when KeepSent recorded it for ctx's request, else res.
func answerSent(ctx context.Context, req mcp.Request, res mcp.Result) mcp.Result {
	if raw := sentFor(ctx, res); raw != nil {
		return &asSent{Result: res, raw: raw, revision: requestRevision(req)}
	}
	return answerTyped(req, res)
}

// answerCall is answerSent for a tools/call's result (an input-required
// one of toolgate's own carries its resultType: asResult).
func answerCall(ctx context.Context, req mcp.Request, res *mcp.CallToolResult) mcp.Result {
	if raw := sentFor(ctx, res); raw != nil {
		return &asSent{Result: res, raw: raw, revision: requestRevision(req)}
	}
	return answerTyped(req, asResult(res))
}

// answerTyped is res for req's client: with resultType on 2026-07-28.
func answerTyped(req mcp.Request, res mcp.Result) mcp.Result {
	if requestRevision(req) >= multiRoundTripRevision {
		return &typed{res}
	}
	return res
}

// typed is a result of the SDK's encoding for a client of 2026-07-28 or
// later, with resultType "complete" when it has none: the SDK writes it
// only on the results of its own handlers, which the adapter answers
// before.
type typed struct{ mcp.Result }

func (r *typed) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(r.Result)
	if err != nil || len(b) < 2 || b[0] != '{' {
		return b, err
	}
	var probe struct {
		ResultType json.RawMessage `json:"resultType"`
	}
	if json.Unmarshal(b, &probe) == nil && probe.ResultType != nil {
		return b, nil
	}
	out := make([]byte, 0, len(b)+len(`"resultType":"complete",`))
	out = append(out, `{"resultType":"complete"`...)
	if rest := bytes.TrimSpace(b[1:]); len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, b[1:]...), nil
}
