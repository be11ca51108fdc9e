package audit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/toolcall"
)

// StageCatalog is the Stage of a record of a decision on a prompt or a
// resource (docs/contract.md §16).
const StageCatalog = "catalog"

// Observer returns the adapter observer (mcpadapter.Adapter.AddObserver)
// that writes a record for every decision on a prompt or a resource that
// was relayed or failed: a prompts/get, resources/read,
// resources/subscribe or completion/complete (docs/contract.md §16). Tool
// is the prompt name or the URI as sent, Method the MCP method, Stage
// "catalog", Outcome "result" (relayed), "failed" (the relay failed) or
// "refused_gate" (the decision failed). What the caller may not see is not
// written, as a hidden tool is not: hidden is absent.
func (a *Auditor) Observer() hooks.Observer {
	return hooks.Observer{Name: HookName, Catalog: a.catalog}
}

func (a *Auditor) catalog(ctx context.Context, rec *hooks.CatalogRecord) {
	outcome := toolcall.OutcomeResult
	switch {
	case rec.Outcome == toolcall.GrantFailed:
		outcome = toolcall.OutcomeRefusedGate
	case !rec.Allowed:
		return
	case rec.Err != nil:
		outcome = toolcall.OutcomeFailed
	}
	r := Record{
		DecisionID: newCatalogID(),
		Timestamp:  rec.Start.UTC().Format(time.RFC3339Nano),
		Tool:       rec.Name,
		Method:     rec.Method,
		Outcome:    string(outcome),
		DurationMS: float64(rec.Duration.Microseconds()) / 1000,
		Meta:       json.RawMessage(`{}`),
		Stage:      StageCatalog,
		Grant:      rec.Outcome.String(),
	}
	if rec.Caller != nil {
		r.Subject = rec.Caller.Subject
	}
	if rec.Err != nil {
		r.Error = rec.Err.Error()
	}
	if rec.Revision != nil {
		r.Revision = revisionName(rec.Revision)
	}
	if sc := trace.SpanContextFromContext(ctx); sc.HasTraceID() {
		r.TraceID = sc.TraceID().String()
	}
	a.enqueue(&r)
}

// newCatalogID is a decision id for a catalog record: 16 random bytes in hex.
func newCatalogID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
