package mcpadapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/internal/jsonx"
	"github.com/toolgate/toolgate/toolcall"
)

// The result rules of docs/contract.md §18: when a method or upstream returns,
// data.toolgate.result.deny may withhold the result and .redact may
// replace what its regular expressions match in the result's text. They
// run only when the policies define them (engine.Revision.HasResultRules):
// a policy without them pays nothing for them.

// MaxResultText bounds the text of a result the result rules evaluate
// (the bytes of every string of input.result, keys included: text,
// decoded text payloads, structuredContent, _meta, ...): a larger result
// is withheld with the internal-error answer (fail closed).
const MaxResultText = 1 << 20

// Redacted replaces each match of a redact pattern.
const Redacted = "[redacted]"

// ResultWithheld is the answer to a call whose result a result rule
// withheld: the reasons joined by "; ".
func ResultWithheld(reasons []string) string {
	return "Error: The result was withheld: " + strings.Join(reasons, "; ") + "."
}

// errResultTooLarge: the result is larger than the result rules evaluate.
var errResultTooLarge = fmt.Errorf("the result has more than %d bytes of text for the result rules", MaxResultText)

// results runs the result rules on the method's result in rec.Result and
// replaces it with what the caller receives: the result withheld, redacted
// or as it was; a failure withholds it (internal error).
func (p *pipeline) results(ctx context.Context, call *hooks.CallContext, ereq *engine.Request, rec *hooks.Record) {
	by := hooks.Answerer{Kind: toolcall.ByResultRule}
	sent := sentFor(ctx, rec.Result)
	doc, sc, err := resultDocumentOf(rec.Result, sent)
	if err != nil {
		fail(rec, toolcall.StageResultFailed, by, fmt.Errorf("result rules: %w", err))
		return
	}
	t := time.Now()
	rd := engineRevision(call.Revision).Result(ctx, call.Caller, *ereq, doc)
	rec.RulesTime += time.Since(t)
	rec.ResultDecision = &rd.ResultDecision
	if rd.Err != nil {
		by.Rules = failureRules(rd.Err)
		fail(rec, toolcall.StageResultFailed, by, fmt.Errorf("result rules: %w", rd.Err))
		return
	}
	if len(rd.Deny) > 0 {
		reasons := make([]string, len(rd.Deny))
		for i, r := range rd.Deny {
			reasons[i] = r.Message
			rec.Denials = append(rec.Denials, hooks.Denial{Reason: r.Message, Rules: r.Rules})
			by.Rules = appendNew(by.Rules, r.Rules...)
		}
		rec.Stage, rec.Outcome, rec.Answerer = toolcall.StageWithheld, toolcall.OutcomeWithheld, by
		rec.Result = TextResult(ResultWithheld(reasons), true)
		return
	}
	if len(rd.Redact) == 0 {
		return
	}
	res, raw, changed, err := redactResultRaw(rec.Result, sc, rd.Redact)
	if err != nil {
		fail(rec, toolcall.StageResultFailed, hooks.Answerer{Kind: toolcall.ByResultRule, Rules: rd.RedactRules}, fmt.Errorf("result rules: redact: %w", err))
		return
	}
	if changed {
		rec.Result, rec.Redacted = res, true
		if sent != nil {
			// A result as its upstream sent it stays so, redacted: the
			// members the SDK's type does not hold, and <, > and &
			// unescaped.
			KeepSent(ctx, res, raw)
		}
	}
}

// resultDocument is input.result for res (schema/input.schema.json): the
// result as a client receives it, as its rules' view (ruleView): every
// string of it, binary payloads of text MIME types decoded, other ones
// by their size; content and isError always present. It also returns the
// result's wire tree, for redactResult. A result with more than
// MaxResultText bytes of strings is errResultTooLarge.
func resultDocument(res *mcp.CallToolResult) (json.RawMessage, any, error) {
	return resultDocumentOf(res, nil)
}

// resultDocumentOf is resultDocument of res as sent: its raw JSON (as its
// upstream sent it, KeepSent) when not nil.
func resultDocumentOf(res *mcp.CallToolResult, sent json.RawMessage) (json.RawMessage, any, error) {
	tree, err := sentTree(res, sent)
	if err != nil {
		return nil, nil, fmt.Errorf("encode the result: %w", err)
	}
	view, err := ruleView(tree, MaxResultText)
	if err != nil {
		return nil, nil, err
	}
	m, ok := view.(map[string]any)
	if !ok {
		return nil, nil, errors.New("the result is not a JSON object")
	}
	if _, ok := m["content"].([]any); !ok {
		m["content"] = []any{}
	}
	if _, ok := m["isError"].(bool); !ok {
		m["isError"] = false
	}
	delete(m, "resultType")
	b, err := json.Marshal(m)
	if err != nil {
		return nil, nil, fmt.Errorf("encode the result document: %w", err)
	}
	return b, tree, nil
}

// redactResult returns res with every match of pats replaced by Redacted
// in every string a client reads of it (redactTree over tree, its wire
// tree), and whether anything changed; res itself is not modified.
// Numbers keep their digits.
func redactResult(res *mcp.CallToolResult, tree any, pats []*regexp.Regexp) (*mcp.CallToolResult, bool, error) {
	out, _, changed, err := redactResultRaw(res, tree, pats)
	return out, changed, err
}

// redactResultRaw is redactResult, with the redacted result's JSON as the
// client receives it (every member of tree kept, nothing escaped for HTML).
func redactResultRaw(res *mcp.CallToolResult, tree any, pats []*regexp.Regexp) (*mcp.CallToolResult, json.RawMessage, bool, error) {
	tree, changed, err := redactTree(tree, pats)
	if err != nil || !changed {
		return res, nil, false, err
	}
	raw, err := jsonx.Marshal(tree)
	if err != nil {
		return nil, nil, false, fmt.Errorf("encode the redacted result: %w", err)
	}
	var got mcp.CallToolResult
	if err := json.Unmarshal(raw, &got); err != nil {
		return nil, nil, false, fmt.Errorf("read the redacted result: %w", err)
	}
	out := *res
	out.Content, out.Meta = got.Content, nil
	m := tree.(map[string]any)
	if meta, ok := m["_meta"].(map[string]any); ok {
		out.Meta = meta
	}
	if res.StructuredContent != nil {
		out.StructuredContent = m["structuredContent"]
	}
	return &out, raw, true, nil
}

// redact replaces every match of each pattern in s, in order.
func redact(s string, pats []*regexp.Regexp) (string, bool) {
	changed := false
	for _, re := range pats {
		if re.MatchString(s) {
			s, changed = re.ReplaceAllLiteralString(s, Redacted), true
		}
	}
	return s, changed
}

// ReadCallToolResult reads a CallToolResult given as JSON exactly as a
// policy's result is read: a member the result would not carry as written
// (misspelt, unknown, of the wrong shape) is an error, never another
// result. `toolgate explain --result` reads its flag with it.
func ReadCallToolResult(raw []byte) (*mcp.CallToolResult, error) {
	res, err := policyResult(raw)
	if err != nil {
		// The reason without the rule's name: this result is no rule's.
		return nil, errors.New(strings.TrimPrefix(err.Error(), errResultShape.Error()+": "))
	}
	return res, nil
}
