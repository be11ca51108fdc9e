package mcpadapter

import (
	"bytes"
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

// MaxResultText bounds the text of a result the result rules evaluate (its
// text content and its structuredContent as JSON): a larger result is
// withheld with the internal-error answer (fail closed).
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
	doc, sc, err := resultDocument(rec.Result)
	if err != nil {
		fail(rec, toolcall.StageResultFailed, by, fmt.Errorf("result rules: %w", err))
		return
	}
	t := time.Now()
	rd := call.Revision.Result(ctx, call.Caller, *ereq, doc)
	rec.RulesTime += time.Since(t)
	rec.ResultDecision = rd
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
	res, changed, err := redactResult(rec.Result, sc, rd.Redact)
	if err != nil {
		fail(rec, toolcall.StageResultFailed, hooks.Answerer{Kind: toolcall.ByResultRule, Rules: rd.RedactRules}, fmt.Errorf("result rules: redact: %w", err))
		return
	}
	if changed {
		rec.Result, rec.Redacted = res, true
	}
}

// resultDocument is input.result for res (schema/input.schema.json):
// content, each item its type and, for text, its text, for another its
// MIME type when it has one; structuredContent; isError. It also returns
// structuredContent as JSON (nil without one). A result with more than
// MaxResultText bytes of text is errResultTooLarge.
func resultDocument(res *mcp.CallToolResult) (json.RawMessage, json.RawMessage, error) {
	type item struct {
		Type     string  `json:"type"`
		Text     *string `json:"text,omitempty"`
		MIMEType string  `json:"mimeType,omitempty"`
	}
	var doc struct {
		Content           []item          `json:"content"`
		StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
		IsError           bool            `json:"isError"`
	}
	doc.Content, doc.IsError = make([]item, 0, len(res.Content)), res.IsError
	size := 0
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			size += len(t.Text)
			if size > MaxResultText {
				return nil, nil, errResultTooLarge
			}
			doc.Content = append(doc.Content, item{Type: "text", Text: &t.Text})
			continue
		}
		raw, err := json.Marshal(c)
		if err != nil {
			return nil, nil, fmt.Errorf("encode a content item: %w", err)
		}
		var w struct {
			Type     string `json:"type"`
			MIMEType string `json:"mimeType"`
			Resource *struct {
				MIMEType string `json:"mimeType"`
			} `json:"resource"`
		}
		if err := json.Unmarshal(raw, &w); err != nil {
			return nil, nil, fmt.Errorf("read a content item: %w", err)
		}
		it := item{Type: w.Type, MIMEType: w.MIMEType}
		if w.Resource != nil && it.MIMEType == "" {
			it.MIMEType = w.Resource.MIMEType
		}
		doc.Content = append(doc.Content, it)
	}
	var sc json.RawMessage
	if res.StructuredContent != nil {
		var err error
		if sc, err = jsonx.Marshal(res.StructuredContent); err != nil {
			return nil, nil, fmt.Errorf("encode structuredContent: %w", err)
		}
		if size += len(sc); size > MaxResultText {
			return nil, nil, errResultTooLarge
		}
		doc.StructuredContent = sc
	}
	b, err := json.Marshal(&doc)
	if err != nil {
		return nil, nil, fmt.Errorf("encode the result document: %w", err)
	}
	return b, sc, nil
}

// redactResult returns res with every match of pats replaced by Redacted
// in its text content and in the string values of its structuredContent
// (sc, as JSON), and whether anything changed; res itself is not
// modified. Numbers in structuredContent keep their digits.
func redactResult(res *mcp.CallToolResult, sc json.RawMessage, pats []*regexp.Regexp) (*mcp.CallToolResult, bool, error) {
	out := *res
	changed := false
	out.Content = make([]mcp.Content, len(res.Content))
	for i, c := range res.Content {
		out.Content[i] = c
		t, ok := c.(*mcp.TextContent)
		if !ok {
			continue
		}
		if s, ok := redact(t.Text, pats); ok {
			cp := *t
			cp.Text, changed = s, true
			out.Content[i] = &cp
		}
	}
	if sc != nil {
		dec := json.NewDecoder(bytes.NewReader(sc))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, false, fmt.Errorf("read structuredContent: %w", err)
		}
		if v, ok := redactValue(v, pats); ok {
			out.StructuredContent, changed = v, true
		}
	}
	return &out, changed, nil
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

// redactValue redacts the strings of a decoded JSON value (object keys are
// names, not values: they stay).
func redactValue(v any, pats []*regexp.Regexp) (any, bool) {
	switch x := v.(type) {
	case string:
		return redact(x, pats)
	case []any:
		changed := false
		for i := range x {
			if y, ok := redactValue(x[i], pats); ok {
				x[i], changed = y, true
			}
		}
		return x, changed
	case map[string]any:
		changed := false
		for k := range x {
			if y, ok := redactValue(x[k], pats); ok {
				x[k], changed = y, true
			}
		}
		return x, changed
	}
	return v, false
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
