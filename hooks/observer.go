package hooks

import (
	"context"
	"time"

	"github.com/toolgate/toolgate/toolcall"
)

// SourceLocal is the CallContext.Source of a caller the operator names
// (stdio's --as, StaticCaller), not one authenticated per request.
const SourceLocal = "local"

// Observer is told of every grant decision the adapter takes and of how
// every call it decided ended: what a decision log (SPEC §14) records.
// Unlike an after hook it also hears of the calls refused at step 4
// (hidden, or no row has the name), and of every listing. Either func may
// be nil.
//
// An Observer is a notification: it runs synchronously, before the answer
// is sent, and must return quickly without blocking (buffer, do not
// write). It cannot change the answer; a panic is logged and ignored. It
// must not modify what it is given, nor keep it past its return.
type Observer struct {
	// Name names the observer in the log when it panics.
	Name string
	// Call hears of every tools/call that reached the grant decision (steps
	// 3 to 8), once: after the after hooks, with the call's Record. A call
	// refused at step 4 has Stage StageUnknown and is told exactly as a
	// hidden one is, whether or not a row has the name. Nobody signed in
	// (step 2) and a missing name (step 1) take no grant decision and are
	// not told.
	Call func(ctx context.Context, call *CallContext, rec *Record)
	// List hears of every tools/list whose caller is signed in (nobody
	// takes no grant decision: an empty listing).
	List func(ctx context.Context, l *ListRecord)
	// Catalog hears of every decision on a prompt or a resource by a
	// signed-in caller: prompts/get, resources/read, resources/subscribe,
	// completion/complete (docs/contract.md §16).
	Catalog func(ctx context.Context, rec *CatalogRecord)
}

// ListRecord is one tools/list's grant decision, read leniently (SPEC §6).
type ListRecord struct {
	// Caller is who listed; never nil.
	Caller *toolcall.Caller
	// Revision is the revision the decision read.
	Revision toolcall.Revision
	// Meta is the bounded _meta.
	Meta toolcall.Meta
	// Outcome is how the grant decision was reached. When it is
	// toolcall.GrantFailed the listing fell back (Fallback).
	Outcome toolcall.GrantOutcome
	// Rules are the rules that defined an override, when the decision
	// was located (served decisions are not, for speed).
	Rules []toolcall.Location
	// Fallback says what a failed decision listed: ListFallbackBase or
	// ListFallbackNone. Meaningless when the decision did not fail.
	Fallback ListFallback
	// Listed are the names of the tools listed, in registry order.
	Listed []string
	// Start is when the adapter began handling the listing, Duration how
	// long it took (without the observers).
	Start    time.Time
	Duration time.Duration
}

// CatalogRecord is one decision on a prompt or a resource (prompts/get,
// resources/read, resources/subscribe, completion/complete), as observers
// hear of it.
type CatalogRecord struct {
	Method   string
	Caller   *toolcall.Caller
	Revision toolcall.Revision
	// Name is the prompt name or the URI as sent.
	Name string
	// Upstream is the upstream that owns it; "" when nothing does.
	Upstream string
	// Allowed says whether it was relayed; Err is a failed decision or
	// a failed relay.
	Allowed bool
	Err     error
	// Outcome is how the decision was reached.
	Outcome  toolcall.GrantOutcome
	Start    time.Time
	Duration time.Duration
}

// ListFallback says what tools/list shows when the grant policy fails.
// A client can provoke such a failure where a policy reads _meta, so the
// choice is the operator's: the base decision may list tools that the
// policy's override hides.
type ListFallback int

const (
	// ListFallbackBase lists the base decision (the default).
	ListFallbackBase ListFallback = iota
	// ListFallbackNone lists nothing.
	ListFallbackNone
)
