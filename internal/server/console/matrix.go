package console

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/internal/inspect"
	"github.com/toolgate/toolgate/toolcall"
)

// Cell states of the matrix.
const (
	CellVisible        = "visible"         // listed and callable; the call runs
	CellHiddenBase     = "hidden_base"     // hidden by the registry's base decision
	CellHiddenOverride = "hidden_override" // hidden by the policy's granted set
	CellApproval       = "approval"        // a call is held until a person approves it
	CellDenied         = "denied"          // a call is refused by toolgate.call.deny (for the given _meta)
	CellAnswered       = "answered"        // a rule answers instead of the method
	CellFailed         = "failed"          // the grant decision or the call rules fail
	CellNobody         = "nobody"          // nobody is signed in
)

// Matrix page sizes.
const (
	DefaultPage = 50
	MaxPage     = 500
	// MaxMatrixCallers bounds the columns of one matrix request.
	MaxMatrixCallers = 50
)

// MatrixRequest is the body of POST /console/api/matrix.
type MatrixRequest struct {
	Callers []toolcall.Caller `json:"callers"`
	// Meta is the _meta of the calls explained (bounded as a request's).
	Meta json.RawMessage `json:"meta,omitempty"`
	// Q keeps the rows whose name, section or method contains it
	// (without letter case).
	Q      string `json:"q,omitempty"`
	Offset int    `json:"offset,omitempty"`
	Limit  int    `json:"limit,omitempty"`
}

// Matrix is the answer: one page of rows, a cell per caller.
type Matrix struct {
	Revision string         `json:"revision"`
	Total    int            `json:"total"`
	Offset   int            `json:"offset"`
	Columns  []MatrixColumn `json:"columns"`
	Rows     []MatrixRow    `json:"rows"`
}

// MatrixColumn is one caller's grant decision.
type MatrixColumn struct {
	Caller     toolcall.Caller `json:"caller"`
	Mode       string          `json:"mode"`
	Evaluation string          `json:"evaluation"`
	Granted    int             `json:"granted"`
}

// Kinds of matrix rows besides tools (docs/contract.md §16).
const (
	KindPrompt   = "prompt"
	KindResource = "resource"
)

// MatrixRow is one registry row, imported prompt or resource, and its
// cells, in column order. Tools come first, then prompts, then resources
// and templates.
type MatrixRow struct {
	// Kind is "" for a tool, KindPrompt or KindResource.
	Kind    string   `json:"kind,omitempty"`
	Name    string   `json:"name"`
	Section string   `json:"section,omitempty"`
	Driver  string   `json:"driver,omitempty"`
	Cells   []string `json:"cells"`
}

func (c *Console) matrix(w http.ResponseWriter, r *http.Request, _ *toolcall.Caller, _ bool) {
	var req MatrixRequest
	if !readJSON(w, r, &req, false) {
		return
	}
	if len(req.Callers) > MaxMatrixCallers {
		httpError(w, http.StatusBadRequest, "too many callers")
		return
	}
	if req.Limit <= 0 {
		req.Limit = DefaultPage
	}
	req.Limit = min(req.Limit, MaxPage)
	req.Offset = max(req.Offset, 0)
	ctx := r.Context()
	m := Matrix{Columns: []MatrixColumn{}, Rows: []MatrixRow{}, Offset: req.Offset}
	xs := make([]*inspect.Explanation, len(req.Callers))
	byName := make([]map[string]*inspect.RowExplanation, len(req.Callers))
	for i := range req.Callers {
		k := &req.Callers[i]
		xs[i] = c.opts.Explainer.Explain(ctx, k, "", req.Meta)
		byName[i] = make(map[string]*inspect.RowExplanation, len(xs[i].Tools))
		for j := range xs[i].Tools {
			byName[i][xs[i].Tools[j].Name] = &xs[i].Tools[j]
		}
		m.Columns = append(m.Columns, MatrixColumn{Caller: *k, Mode: xs[i].Mode, Evaluation: xs[i].Evaluation, Granted: len(xs[i].Granted)})
	}
	// The rows come from an explanation for nobody when no caller is
	// given, so the registry can be browsed before choosing callers.
	base := xs
	if len(base) == 0 {
		base = []*inspect.Explanation{c.opts.Explainer.Explain(ctx, nil, "", nil)}
	}
	m.Revision = base[0].Revision
	q := strings.ToLower(strings.TrimSpace(req.Q))
	n := 0
	for _, t := range base[0].Tools {
		if q != "" && !strings.Contains(strings.ToLower(t.Name), q) && !strings.Contains(strings.ToLower(t.Section), q) {
			continue
		}
		n++
		if n <= req.Offset || len(m.Rows) >= req.Limit {
			continue
		}
		row := MatrixRow{Name: t.Name, Section: t.Section, Driver: t.Driver, Cells: make([]string, len(req.Callers))}
		for i := range req.Callers {
			row.Cells[i] = c.cell(r, &req.Callers[i], xs[i], byName[i][t.Name], req.Meta)
		}
		m.Rows = append(m.Rows, row)
	}
	// Prompts and resources (docs/contract.md §16): the same decisions the
	// server reads.
	keep := func(name, section string) bool {
		if q != "" && !strings.Contains(strings.ToLower(name), q) && !strings.Contains(strings.ToLower(section), q) {
			return false
		}
		n++
		return n > req.Offset && len(m.Rows) < req.Limit
	}
	for k, p := range base[0].Prompts {
		if !keep(p.Name, p.Section) {
			continue
		}
		row := MatrixRow{Kind: KindPrompt, Name: p.Name, Section: p.Section, Cells: make([]string, len(req.Callers))}
		for i := range req.Callers {
			row.Cells[i] = promptCell(xs[i], k)
		}
		m.Rows = append(m.Rows, row)
	}
	if c.opts.Resources != nil && c.opts.DecideResource != nil {
		for _, res := range c.opts.Resources(ctx) {
			if !keep(res.URI, res.Section) {
				continue
			}
			row := MatrixRow{Kind: KindResource, Name: res.URI, Section: res.Section, Cells: make([]string, len(req.Callers))}
			for i := range req.Callers {
				row.Cells[i] = resourceCell(c.opts.DecideResource(ctx, &req.Callers[i], &res))
			}
			m.Rows = append(m.Rows, row)
		}
	}
	m.Total = n
	writeJSON(w, http.StatusOK, m)
}

// promptCell classifies one caller × prompt k.
func promptCell(x *inspect.Explanation, k int) string {
	switch {
	case x.Mode == engine.Nobody.String():
		return CellNobody
	case x.Mode == engine.Failed.String():
		return CellFailed
	case k >= len(x.Prompts): // the revision changed between two explanations
		return CellFailed
	case x.Prompts[k].Granted:
		return CellVisible
	case x.Prompts[k].Override:
		return CellHiddenOverride
	}
	return CellHiddenBase
}

// resourceCell classifies one caller × resource.
func resourceCell(d engine.ResourceDecision) string {
	switch {
	case d.Outcome == engine.Nobody:
		return CellNobody
	case d.Outcome == engine.Failed:
		return CellFailed
	case d.Allowed:
		return CellVisible
	case d.Outcome == engine.Override:
		return CellHiddenOverride
	}
	return CellHiddenBase
}

// cell classifies one caller × tool: the grant decision, then, for a
// granted tool, what a call would get at step 5.
func (c *Console) cell(r *http.Request, k *toolcall.Caller, x *inspect.Explanation, row *inspect.RowExplanation, meta json.RawMessage) string {
	switch {
	case x.Mode == engine.Nobody.String():
		return CellNobody
	case x.Mode == engine.Failed.String():
		return CellFailed
	case row == nil: // the revision changed between two explanations
		return CellFailed
	case !row.Granted && x.Mode == engine.Override.String():
		return CellHiddenOverride
	case !row.Granted:
		return CellHiddenBase
	}
	if c.opts.Calls != nil {
		return callCell(c.opts.Calls(r.Context(), k, row.Name, meta))
	}
	call := c.opts.Explainer.Explain(r.Context(), k, row.Name, meta).Call
	if call == nil {
		return CellFailed
	}
	switch call.Stage {
	case inspect.StageRun:
		return CellVisible
	case inspect.StageHeld:
		return CellApproval
	case inspect.StageDenied:
		return CellDenied
	case inspect.StageAnswered:
		return CellAnswered
	case inspect.StageUnknown:
		return CellHiddenBase
	}
	return CellFailed
}

// ExplainRequest is the body of POST /console/api/explain.
type ExplainRequest struct {
	Caller *toolcall.Caller `json:"caller"`
	Tool   string           `json:"tool"`
	Meta   json.RawMessage  `json:"meta,omitempty"`
}

// CellExplanation is the answer: the grant decision for the caller, the
// row, and what the call would get (inspect.CallExplanation: stage,
// answer, what decided and the rules, file:line).
type CellExplanation struct {
	Revision      string                   `json:"revision"`
	Caller        *toolcall.Caller         `json:"caller"`
	Mode          string                   `json:"mode"`
	OverrideRules []engine.Location        `json:"override_rules,omitempty"`
	Failure       string                   `json:"failure,omitempty"`
	Evaluation    string                   `json:"evaluation"`
	EvaluationWhy string                   `json:"evaluation_why"`
	Row           *inspect.RowExplanation  `json:"row,omitempty"`
	Call          *inspect.CallExplanation `json:"call"`
}

func (c *Console) explain(w http.ResponseWriter, r *http.Request, _ *toolcall.Caller, _ bool) {
	var req ExplainRequest
	if !readJSON(w, r, &req, false) {
		return
	}
	if req.Tool == "" {
		httpError(w, http.StatusBadRequest, "tool is required")
		return
	}
	x := c.opts.Explainer.Explain(r.Context(), req.Caller, req.Tool, req.Meta)
	out := CellExplanation{Revision: x.Revision, Caller: x.Caller, Mode: x.Mode, OverrideRules: x.OverrideRules, Failure: x.Failure,
		Evaluation: x.Evaluation, EvaluationWhy: x.EvaluationWhy, Call: x.Call}
	for i := range x.Tools {
		if x.Tools[i].Name == req.Tool {
			out.Row = &x.Tools[i]
			break
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// callCell classifies the call decision of a granted call in the order of
// docs/contract.md §13: a failure, then refusing wins, then approval, then answers.
func callCell(cd *engine.CallDecision) string {
	switch {
	case cd == nil || cd.Err != nil:
		return CellFailed
	case len(cd.Deny) > 0:
		return CellDenied
	case cd.Approval != nil:
		return CellApproval
	case cd.Result != nil:
		return CellAnswered
	}
	return CellVisible
}
