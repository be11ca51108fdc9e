package mcpadapter

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/registry"
)

// ErrNoHistory fails a call whose policy reads input.history on a server
// without a history store.
var ErrNoHistory = errors.New("the policy reads input.history but the server has no history store")

// maxRememberedValue is the longest JSON of a remembered value kept as it
// is; a longer one is kept as "sha256:<hex>" of its JSON
// (docs/contract.md §20).
const maxRememberedValue = 256

// loadHistory puts the caller's history into the call's request, when the
// registry configures one and the decision about to be taken reads it
// (grant: the grant decision's; else the call and result rules'). A
// policy that does not read input.history never loads it.
func (p *pipeline) loadHistory(ctx context.Context, call *hooks.CallContext, ereq *engine.Request, rec *hooks.Record, grant bool) error {
	if ereq.History != nil {
		return nil
	}
	g, c := engineRevision(call.Revision).HistoryReads()
	if grant && !g || !grant && !c {
		return nil
	}
	cfg := engineRevision(call.Revision).Registry().History
	h, err := p.fx.history(ctx, call.Source, call.Caller.Subject, cfg.Window(), cfg.Max)
	if err != nil {
		return err
	}
	if h == nil {
		h = engine.History{}
	}
	ereq.History = h
	rec.History = &hooks.HistoryRead{History: h}
	return nil
}

// recordHistory adds a call that reached step 5 to its caller's history
// (docs/contract.md §20), once its audit outcome is known, with the
// row's remembered arguments. A call that ended before step 5 (no name,
// nobody, a failed grant decision, a hidden or unknown tool) is never
// recorded: hidden is absent. A store that fails is logged; the caller's
// answer is already given.
func (a *Adapter) recordHistory(ctx context.Context, call *hooks.CallContext, rec *hooks.Record) {
	cfg := engineRevision(call.Revision).Registry().History
	if cfg == nil || call.Tool == nil || a.opts.History == nil || rec.Dry {
		return
	}
	e := engine.HistoryEntry{Tool: call.Name, Outcome: string(rec.Outcome), Arguments: remembered(call.Tool, call.Arguments)}
	err := a.opts.History.Record(context.WithoutCancel(ctx), call.Source, call.Caller.Subject, e, cfg.Window(), cfg.Max)
	if err != nil {
		a.log.Error("tools/call: could not record the call in the caller's history",
			slog.String("decision_id", call.DecisionID), slog.String("tool", call.Name), slog.Any("error", err))
	}
}

// remembered is the JSON object of row's remembered arguments in args (as
// sent), in the row's order; a value whose JSON is longer than
// maxRememberedValue bytes is kept as "sha256:<hex>" of its JSON.
func remembered(row *registry.Tool, args json.RawMessage) json.RawMessage {
	if len(row.Remember) == 0 {
		return json.RawMessage(`{}`)
	}
	var sent map[string]json.RawMessage
	if json.Unmarshal(args, &sent) != nil {
		return json.RawMessage(`{}`)
	}
	var b bytes.Buffer
	b.WriteByte('{')
	n := 0
	for _, name := range row.Remember {
		v, ok := sent[name]
		if !ok {
			continue
		}
		var c bytes.Buffer
		if json.Compact(&c, v) != nil {
			continue
		}
		val := c.Bytes()
		if len(val) > maxRememberedValue {
			sum := sha256.Sum256(val)
			val, _ = json.Marshal("sha256:" + hex.EncodeToString(sum[:]))
		}
		if n > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(name)
		b.Write(k)
		b.WriteByte(':')
		b.Write(val)
		n++
	}
	b.WriteByte('}')
	return b.Bytes()
}
