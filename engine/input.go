package engine

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/toolgate/toolgate/registry"
)

// Methods a Request can carry.
const (
	MethodList = "tools/list"
	MethodCall = "tools/call"
)

// Request is the part of the input document that comes from the MCP request.
type Request struct {
	// Method is MethodList or MethodCall.
	Method string
	// Tool is the tool name as sent (calls only), also when it names nothing.
	Tool string
	// Arguments is the arguments object as sent (calls only). Anything but a
	// JSON object is read as {}.
	Arguments json.RawMessage
	// Meta is the bounded _meta of the request.
	Meta Meta
}

// Keys of the input document (SPEC §3).
var (
	keyCaller      = ast.StringTerm("caller")
	keyTools       = ast.StringTerm("tools")
	keyRequest     = ast.StringTerm("request")
	keyTool        = ast.StringTerm("tool")
	keyMethod      = ast.StringTerm("method")
	keyArguments   = ast.StringTerm("arguments")
	keyMeta        = ast.StringTerm("meta")
	keySubject     = ast.StringTerm("subject")
	keyRoles       = ast.StringTerm("roles")
	keyClaims      = ast.StringTerm("claims")
	keyName        = ast.StringTerm("name")
	keySection     = ast.StringTerm("section")
	keyDriver      = ast.StringTerm("driver")
	keyBase        = ast.StringTerm("base")
	keyAnnotations = ast.StringTerm("annotations")
	keyType        = ast.StringTerm("type")
	keyRequired    = ast.StringTerm("required")
	keyDefault     = ast.StringTerm("default")

	keyUpstream            = ast.StringTerm("upstream")
	keyUpstreamAnnotations = ast.StringTerm("upstream_annotations")
)

// rowTerms are the parts of one row's input object that do not depend on the
// caller, built once per revision.
type rowTerms struct {
	name, method, section, driver, arguments, annotations *ast.Term
	// upstream is the SERVER of a method upstream:SERVER/TOOL, else null;
	// upstreamAnnotations the annotations an imported row's upstream
	// declared ({} when none), null for a registry file's row (SPEC §15).
	upstream, upstreamAnnotations *ast.Term
}

func buildRowTerms(t *registry.Tool) rowTerms {
	rt := rowTerms{
		name:      ast.StringTerm(t.Name),
		method:    ast.StringTerm(t.Method),
		section:   ast.NullTerm(),
		driver:    ast.NullTerm(),
		arguments: ast.ArrayTerm(),
	}
	if t.Section != "" {
		rt.section = ast.StringTerm(t.Section)
	}
	if t.Driver != "" {
		rt.driver = ast.StringTerm(t.Driver)
	}
	args := make([]*ast.Term, 0, len(t.Arguments))
	for _, a := range t.Arguments {
		kv := [][2]*ast.Term{
			{keyName, ast.StringTerm(a.Name)},
			{keyType, ast.StringTerm(a.Type)},
			{keyRequired, ast.BooleanTerm(a.Required)},
		}
		if a.Default != nil {
			if v, err := jsonToValue(a.Default); err == nil {
				kv = append(kv, [2]*ast.Term{keyDefault, ast.NewTerm(v)})
			}
		}
		args = append(args, ast.ObjectTerm(kv...))
	}
	rt.arguments = ast.ArrayTerm(args...)
	ann, err := ast.InterfaceToValue(t.Annotations)
	if err != nil || t.Annotations == nil {
		ann = ast.NewObject()
	}
	rt.annotations = ast.NewTerm(ann)
	rt.upstream, rt.upstreamAnnotations = ast.NullTerm(), ast.NullTerm()
	if server := t.Upstream(); server != "" {
		rt.upstream = ast.StringTerm(server)
	}
	if t.Imported != nil {
		// Decoded from JSON by the import (bools, strings, float64): this
		// conversion cannot fail.
		up, err := ast.InterfaceToValue(t.Imported.Annotations)
		if err != nil || t.Imported.Annotations == nil {
			up = ast.NewObject()
		}
		rt.upstreamAnnotations = ast.NewTerm(up)
	}
	return rt
}

func (rt *rowTerms) object(base bool) *ast.Term {
	return ast.ObjectTerm(
		[2]*ast.Term{keyName, rt.name},
		[2]*ast.Term{keyMethod, rt.method},
		[2]*ast.Term{keySection, rt.section},
		[2]*ast.Term{keyDriver, rt.driver},
		[2]*ast.Term{keyBase, ast.BooleanTerm(base)},
		[2]*ast.Term{keyArguments, rt.arguments},
		[2]*ast.Term{keyAnnotations, rt.annotations},
		[2]*ast.Term{keyUpstream, rt.upstream},
		[2]*ast.Term{keyUpstreamAnnotations, rt.upstreamAnnotations},
	)
}

// callerView is what a revision knows about one caller: the base decision
// per row and the input document's caller and tools, built once and shared
// by every decision for callers with the same roles.
type callerView struct {
	base  []bool
	tools *ast.Term // the tools array
	rows  []*ast.Term
}

// maxCallerViews bounds the per-revision cache of caller views; past it
// views are built per decision.
const maxCallerViews = 4096

type viewCache struct {
	mu    sync.RWMutex
	views map[string]*callerView
}

// roleKey is the canonical key of a caller's role set: the base decision
// depends on nothing else.
func roleKey(c *Caller) string {
	roles := slices.Clone(c.Roles)
	slices.Sort(roles)
	roles = slices.Compact(roles)
	return strings.Join(roles, "\x00")
}

func (r *Revision) view(c *Caller) *callerView {
	key := roleKey(c)
	r.views.mu.RLock()
	v := r.views.views[key]
	r.views.mu.RUnlock()
	if v != nil {
		return v
	}
	v = &callerView{base: make([]bool, len(r.reg.Tools)), rows: make([]*ast.Term, len(r.reg.Tools))}
	for i := range r.reg.Tools {
		v.base[i] = Base(r.reg, &r.reg.Tools[i], c)
		v.rows[i] = r.rowTerms[i].object(v.base[i])
	}
	v.tools = ast.ArrayTerm(v.rows...)
	r.views.mu.Lock()
	if r.views.views == nil {
		r.views.views = map[string]*callerView{}
	}
	if len(r.views.views) < maxCallerViews {
		r.views.views[key] = v
	}
	r.views.mu.Unlock()
	return v
}

func callerTerm(c *Caller) *ast.Term {
	if c == nil {
		return ast.NullTerm()
	}
	roles := make([]*ast.Term, len(c.Roles))
	for i, r := range c.Roles {
		roles[i] = ast.StringTerm(r)
	}
	var claims ast.Value = ast.NewObject()
	if len(c.Claims) > 0 {
		if v, err := ast.InterfaceToValue(c.Claims); err == nil {
			claims = v
		}
	}
	return ast.ObjectTerm(
		[2]*ast.Term{keySubject, ast.StringTerm(c.Subject)},
		[2]*ast.Term{keyRoles, ast.ArrayTerm(roles...)},
		[2]*ast.Term{keyClaims, ast.NewTerm(claims)},
	)
}

// argumentsValue normalises the arguments as sent: anything but a JSON
// object is {}.
func argumentsValue(raw json.RawMessage) ast.Value {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return ast.NewObject()
	}
	v, err := jsonToValue(raw)
	if err != nil {
		return ast.NewObject()
	}
	if _, ok := v.(ast.Object); !ok {
		return ast.NewObject()
	}
	return v
}

func jsonToValue(raw json.RawMessage) (ast.Value, error) {
	return ast.ValueFromReader(bytes.NewReader(raw))
}

// input builds the input document of one decision. tool, when not nil, is
// the index of the resolved row, added as "tool" for the call rules.
func (r *Revision) input(c *Caller, v *callerView, req *Request, tool int) ast.Value {
	reqKV := [][2]*ast.Term{{keyMethod, ast.StringTerm(req.Method)}}
	if req.Method == MethodCall {
		reqKV = append(reqKV,
			[2]*ast.Term{keyTool, ast.StringTerm(req.Tool)},
			[2]*ast.Term{keyArguments, ast.NewTerm(argumentsValue(req.Arguments))},
		)
	}
	reqKV = append(reqKV, [2]*ast.Term{keyMeta, ast.NewTerm(req.Meta.ASTValue())})
	tools := ast.ArrayTerm()
	if v != nil {
		tools = v.tools
	}
	kv := [][2]*ast.Term{
		{keyCaller, callerTerm(c)},
		{keyTools, tools},
		{keyRequest, ast.ObjectTerm(reqKV...)},
	}
	if tool >= 0 && v != nil {
		kv = append(kv, [2]*ast.Term{keyTool, v.rows[tool]})
	}
	return ast.NewObject(kv...)
}

// InputDocument returns, as JSON, the input document the revision builds for
// a caller and request (and, for call rules, the named tool). It is what
// policy authors read and what schema/input.schema.json describes.
func (r *Revision) InputDocument(c *Caller, req Request, withTool bool) ([]byte, error) {
	var v *callerView
	if c != nil {
		v = r.view(c)
	}
	idx := -1
	if withTool {
		idx = r.ToolIndex(req.Tool)
	}
	doc, err := ast.JSON(r.input(c, v, &req, idx))
	if err != nil {
		return nil, err
	}
	return json.Marshal(doc)
}
