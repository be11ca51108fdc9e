package decisionlog

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/toolgate/toolgate/internal/canon"
)

// Paths of toolgate's decisions, as the path of their events.
const (
	// PathGrant is a grant decision: which tools the caller may use.
	PathGrant = "toolgate/grant/granted"
	// PathCall is a call decision: how one tools/call ended.
	PathCall = "toolgate/call"
)

// Event is one decision-log event in the shape of OPA's
// (github.com/open-policy-agent/opa/v1/plugins/logs.EventV1): the same field
// names and JSON tags, for the fields toolgate fills. A sink that accepts
// OPA's decision logs decodes it with OPA's own type.
type Event struct {
	// Labels has no omitempty, as in OPA: a missing labels is null.
	Labels     map[string]string     `json:"labels"`
	DecisionID string                `json:"decision_id"`
	TraceID    string                `json:"trace_id,omitempty"`
	SpanID     string                `json:"span_id,omitempty"`
	Revision   string                `json:"revision,omitempty"`
	Bundles    map[string]BundleInfo `json:"bundles,omitempty"`
	Path       string                `json:"path,omitempty"`
	Input      any                   `json:"input,omitempty"`
	Result     any                   `json:"result,omitempty"`
	Timestamp  time.Time             `json:"timestamp"`
	Metrics    map[string]any        `json:"metrics,omitempty"`
	Custom     map[string]any        `json:"custom,omitempty"`
}

// BundleInfo is OPA's BundleInfoV1: the revision of a bundle a decision read.
type BundleInfo struct {
	Revision string `json:"revision,omitempty"`
}

// Decision is one decision to log, in plain values. Arguments are hashed
// when the event is built: no argument value ever reaches an event.
type Decision struct {
	// ID is the decision id (the call's for PathCall).
	ID string
	// Path is PathGrant or PathCall.
	Path string
	// Time is when the decision was taken; zero: when it is logged.
	Time time.Time
	// Revision is the revision (or bundle revision) the decision read.
	Revision string
	// Subject and Roles are the caller's; Subject "" logs a null caller.
	Subject string
	Roles   []string
	// Method is the MCP method: "tools/call" or "tools/list".
	Method string
	// Tool is the tool name as sent (calls only).
	Tool string
	// Arguments is the arguments object as sent; each value is replaced by
	// the hex SHA-256 of its canonical JSON.
	Arguments json.RawMessage
	// Meta is the bounded _meta as JSON; nil logs {}. Its entries are
	// logged by name, each value hashed like an argument's.
	Meta json.RawMessage
	// Result is the decision's result, as JSON-encodable plain values.
	Result any
	// Metrics are OPA-style metrics ("timer_…_ns": int64).
	Metrics map[string]any
	// TraceID and SpanID are the W3C trace and span of the decision, or "".
	TraceID, SpanID string
	// Custom is extra fields, under OPA's custom key.
	Custom map[string]any
	// History, when not nil, is the caller's history the decision read
	// (input.history, docs/contract.md §20) as a JSON array of
	// HistoryEntries entries. The event says how many and their hash
	// (hashed like an argument); the entries themselves only with
	// Options.HistoryEntries.
	History        json.RawMessage
	HistoryEntries int
}

// event builds the Event of d with the logger's labels and bundle name,
// each value of the arguments and of _meta hashed by h.
func (d *Decision) event(labels map[string]string, bundle string, now time.Time, h hasher, historyEntries bool) Event {
	ts := d.Time
	if ts.IsZero() {
		ts = now
	}
	var caller any
	if d.Subject != "" {
		roles := d.Roles
		if roles == nil {
			roles = []string{}
		}
		caller = map[string]any{"subject": d.Subject, "roles": roles}
	}
	// _meta is the client's, as free as the arguments (a client may put a
	// token there): its entries keep their names, their values are hashed.
	req := map[string]any{"method": d.Method, "meta": h.object(d.Meta)}
	if d.Method == "tools/call" || d.Tool != "" {
		req["tool"] = d.Tool
		req["arguments"] = h.object(d.Arguments)
		req["arguments_sha256"] = h.value(d.Arguments)
	}
	if len(h.key) != 0 {
		req["hash"] = "hmac-sha256"
	}
	input := map[string]any{"caller": caller, "request": req}
	if d.History != nil {
		hist := map[string]any{"entries": d.HistoryEntries, "sha256": h.value(d.History)}
		if historyEntries {
			hist["read"] = d.History
		}
		input["history"] = hist
	}
	e := Event{
		Labels:     labels,
		DecisionID: d.ID,
		TraceID:    d.TraceID,
		SpanID:     d.SpanID,
		Revision:   d.Revision,
		Path:       d.Path,
		Input:      input,
		Result:     d.Result,
		Timestamp:  ts.UTC(),
		Metrics:    d.Metrics,
		Custom:     d.Custom,
	}
	if d.Revision != "" {
		e.Bundles = map[string]BundleInfo{bundle: {Revision: d.Revision}}
	}
	return e
}

// HashArguments returns the arguments object with each value replaced by the
// hex SHA-256 of its canonical JSON (SHA256). Anything but a JSON object is
// {}.
func HashArguments(raw json.RawMessage) map[string]string { return hasher{}.object(raw) }

// hasher hashes logged values: SHA-256 of their canonical JSON, or with a
// key HMAC-SHA256 (Options.HashKey), which nobody without the key can
// reverse by hashing guesses.
type hasher struct{ key []byte }

func (h hasher) value(raw []byte) string {
	if len(h.key) == 0 {
		return SHA256(raw)
	}
	m := hmac.New(sha256.New, h.key)
	m.Write(canon.JSON(raw))
	return hex.EncodeToString(m.Sum(nil))
}

// object is HashArguments with h.
func (h hasher) object(raw json.RawMessage) map[string]string {
	var obj map[string]json.RawMessage
	out := map[string]string{}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return out
	}
	for k, v := range obj {
		out[k] = h.value(v)
	}
	return out
}

// SHA256 is the hex SHA-256 of the canonical form of a JSON value (keys
// sorted, numbers as their text, no HTML escaping): the hash the audit
// trail's arguments_sha256 and the ledger use (internal/canon). Input that
// is not valid JSON is hashed as is.
func SHA256(raw []byte) string { return canon.SHA256(raw) }
