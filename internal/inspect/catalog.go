package inspect

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/internal/lines"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/toolcall"
)

// PromptExplanation is the decision on one prompt (docs/contract.md §16),
// read from the same grant decision prompts/list and prompts/get read.
type PromptExplanation struct {
	Name string `json:"name"`
	// Exists reports that an importing upstream has it (Upstream, Section).
	Exists   bool   `json:"exists"`
	Upstream string `json:"upstream,omitempty"`
	Section  string `json:"section,omitempty"`
	// Base is the base decision of its section.
	Base bool `json:"base"`
	// Granted is the strict reading (prompts/get); Listed the lenient one
	// (prompts/list).
	Granted bool `json:"granted"`
	Listed  bool `json:"listed"`
	// DecidedBy says what decided, in words.
	DecidedBy string `json:"decided_by"`
	// Answer is what prompts/get answers when not granted (hidden and
	// absent alike).
	Answer  string `json:"answer,omitempty"`
	Failure string `json:"failure,omitempty"`
}

// ResourceExplanation is the one decision on a resource (docs/contract.md
// §16).
type ResourceExplanation struct {
	URI string `json:"uri"`
	// Exists reports that an upstream lists it, or a template matches it.
	Exists   bool   `json:"exists"`
	Upstream string `json:"upstream,omitempty"`
	Section  string `json:"section,omitempty"`
	Template string `json:"template,omitempty"`
	Base     bool   `json:"base"`
	// Outcome is no_override (the base decision stands), override
	// (data.toolgate.grant.resource decided), failed or nobody.
	Outcome string `json:"outcome"`
	// Allowed is the strict reading (read, subscribe); Listed the lenient
	// one.
	Allowed   bool   `json:"allowed"`
	Listed    bool   `json:"listed"`
	DecidedBy string `json:"decided_by"`
	Answer    string `json:"answer,omitempty"`
	Failure   string `json:"failure,omitempty"`
}

// PromptRow is the decision on one imported prompt, as the matrix shows
// it.
type PromptRow struct {
	Name     string `json:"name"`
	Upstream string `json:"upstream"`
	Section  string `json:"section,omitempty"`
	Base     bool   `json:"base"`
	// Granted is the strict reading (prompts/get), Listed the lenient one.
	Granted bool `json:"granted"`
	Listed  bool `json:"listed"`
	// Override reports that data.toolgate.grant.prompts decided.
	Override bool `json:"override"`
}

func promptRows(rev *engine.Revision, c *toolcall.Caller, d *engine.GrantDecision) []PromptRow {
	prompts := rev.Registry().Prompts
	if len(prompts) == 0 {
		return nil
	}
	listed := map[int]bool{}
	for _, i := range d.VisiblePrompts() {
		listed[i] = true
	}
	out := make([]PromptRow, len(prompts))
	for i := range prompts {
		p := &prompts[i]
		ok, _ := d.PromptAllowed(p.Name)
		out[i] = PromptRow{Name: p.Name, Upstream: p.Upstream, Section: p.Section, Base: engine.BaseSection(rev.Registry(), p.Section, c),
			Granted: ok, Listed: listed[i], Override: d.PromptsOverride()}
	}
	return out
}

func explainPrompt(ctx context.Context, rev *engine.Revision, c *toolcall.Caller, name string, args json.RawMessage, meta engine.Meta) *PromptExplanation {
	x := &PromptExplanation{Name: name}
	p := rev.Prompt(name)
	if p != nil {
		x.Exists, x.Upstream, x.Section = true, p.Upstream, p.Section
		x.Base = engine.BaseSection(rev.Registry(), p.Section, c)
	}
	d := rev.Grant(ctx, c, engine.Request{Method: engine.MethodPromptsGet, Prompt: name, Arguments: args, Meta: meta})
	ok, err := d.PromptAllowed(name)
	x.Granted = ok
	for _, i := range d.VisiblePrompts() {
		if rev.Registry().Prompts[i].Name == name {
			x.Listed = true
		}
	}
	switch {
	case c == nil:
		x.DecidedBy = "nobody is signed in"
	case err != nil:
		x.DecidedBy, x.Failure, x.Answer = "the grant decision failed", err.Error(), mcpadapter.AnswerPromptUnverified
		return x
	case p == nil:
		x.DecidedBy = "no importing upstream has this prompt"
	case d.PromptsOverride():
		x.DecidedBy = "data.toolgate.grant.prompts"
	default:
		x.DecidedBy = "the base decision: section " + p.Section
	}
	if !ok {
		x.Answer = mcpadapter.AnswerUnknownPrompt(name)
	}
	return x
}

func explainResource(ctx context.Context, rev *engine.Revision, c *toolcall.Caller, uri string, res *engine.Resource, meta engine.Meta) *ResourceExplanation {
	x := &ResourceExplanation{URI: uri, Outcome: engine.NoOverride.String()}
	if res == nil {
		x.DecidedBy, x.Answer = "no upstream lists it and no template matches it", mcpadapter.AnswerUnknownResource
		if c == nil {
			x.Outcome = engine.Nobody.String()
		}
		return x
	}
	x.Exists, x.Upstream, x.Section, x.Template = true, res.Upstream, res.Section, res.Template
	d := rev.GrantResource(ctx, c, engine.Request{Method: engine.MethodResourcesRead, URI: uri, Meta: meta}, res)
	x.Base, x.Outcome, x.Allowed, x.Listed = d.Base, d.Outcome.String(), d.Allowed, d.Visible()
	switch d.Outcome {
	case engine.Nobody:
		x.DecidedBy = "nobody is signed in"
	case engine.Failed:
		x.DecidedBy, x.Failure = "data.toolgate.grant.resource failed", d.Err.Error()
	case engine.Override:
		x.DecidedBy = "data.toolgate.grant.resource"
	default:
		x.DecidedBy = "the base decision: section " + res.Section
	}
	if !d.Allowed {
		x.Answer = mcpadapter.AnswerUnknownResource
	}
	return x
}

func (x *PromptExplanation) writeText(p *lines.Writer) {
	p.Line("")
	p.Line("prompt    %s", x.Name)
	if x.Exists {
		p.Line("  upstream %s, section %s, base %t", x.Upstream, orNone(x.Section), x.Base)
	}
	p.Line("  granted %t, listed %t: %s", x.Granted, x.Listed, x.DecidedBy)
	if x.Answer != "" {
		p.Line("  prompts/get answers: %s", x.Answer)
	}
	if x.Failure != "" {
		p.Line("  failure: %s", x.Failure)
	}
}

func (x *ResourceExplanation) writeText(p *lines.Writer) {
	p.Line("")
	p.Line("resource  %s", x.URI)
	if x.Exists {
		tmpl := ""
		if x.Template != "" {
			tmpl = fmt.Sprintf(", template %s", x.Template)
		}
		p.Line("  upstream %s, section %s%s, base %t", x.Upstream, orNone(x.Section), tmpl, x.Base)
	}
	p.Line("  allowed %t, listed %t: %s", x.Allowed, x.Listed, x.DecidedBy)
	if x.Answer != "" {
		p.Line("  resources/read answers: %s", x.Answer)
	}
	if x.Failure != "" {
		p.Line("  failure: %s", x.Failure)
	}
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
