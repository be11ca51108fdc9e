package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/toolgate/toolgate/internal/exactjson"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/toolcall"
)

// Methods a Request can carry.
const (
	MethodList = "tools/list"
	MethodCall = "tools/call"
	// The methods of prompts and resources (docs/contract.md §16). A
	// prompts/get names its prompt in Request.Prompt (with its arguments
	// in Request.Arguments); a resources/read, resources/subscribe or
	// resources/unsubscribe its URI in Request.URI; a completion/complete
	// the prompt or the URI (template) it completes.
	MethodPromptsList   = "prompts/list"
	MethodPromptsGet    = "prompts/get"
	MethodResourcesList = "resources/list"
	MethodTemplatesList = "resources/templates/list"
	MethodResourcesRead = "resources/read"
	MethodSubscribe     = "resources/subscribe"
	MethodUnsubscribe   = "resources/unsubscribe"
	MethodComplete      = "completion/complete"
)

// Request is the part of the input document that comes from the MCP request.
type Request struct {
	// Method is MethodList or MethodCall.
	Method string
	// Tool is the tool name as sent (calls only), also when it names nothing.
	Tool string
	// Arguments is the arguments object as sent (calls only). Anything but a
	// JSON object is read as {}. An object that cannot be represented
	// exactly (see InputError) makes the decision fail.
	Arguments json.RawMessage
	// Meta is the bounded _meta of the request.
	Meta Meta
	// Prompt is the prompt name as sent (prompts/get, and completion/complete
	// of a prompt's argument), also when it names nothing.
	Prompt string
	// URI is the resource URI as sent (resources/read, subscribe,
	// unsubscribe), or the URI template a completion/complete names.
	URI string
	// History is the caller's history, input.history (docs/contract.md
	// §20); nil leaves it out of the input.
	History History
}

// Keys of the input document (docs/contract.md §3).
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

	keyPrompts     = ast.StringTerm("prompts")
	keyPrompt      = ast.StringTerm("prompt")
	keyURI         = ast.StringTerm("uri")
	keyDescription = ast.StringTerm("description")

	keyUpstream            = ast.StringTerm("upstream")
	keyUpstreamAnnotations = ast.StringTerm("upstream_annotations")
)

// rowTerms are the parts of one row's input object that do not depend on the
// caller, built once per revision.
type rowTerms struct {
	name, method, section, driver, arguments, annotations *ast.Term
	// upstream is the SERVER of a method upstream:SERVER/TOOL, else null;
	// upstreamAnnotations the annotations an imported row's upstream
	// declared ({} when none), null for a registry file's row (docs/contract.md §15).
	upstream, upstreamAnnotations *ast.Term
}

// buildRowTerms converts a row for the input document. The registry refuses
// at load what cannot be represented (annotations, defaults); an error here
// is a registry that was not validated, and fails the revision.
func buildRowTerms(t *registry.Tool) (rowTerms, error) {
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
		kv := [][2]*ast.Term{{keyName, ast.StringTerm(a.Name)}}
		if a.Type != "" { // an imported property whose schema gives no one type (docs/contract.md §19)
			kv = append(kv, [2]*ast.Term{keyType, ast.StringTerm(a.Type)})
		}
		kv = append(kv, [2]*ast.Term{keyRequired, ast.BooleanTerm(a.Required)})
		if a.Default != nil {
			v, err := exactjson.Value(a.Default)
			if err != nil {
				return rt, fmt.Errorf("tool %s: argument %s: default: %w", t.Name, a.Name, err)
			}
			kv = append(kv, [2]*ast.Term{keyDefault, ast.NewTerm(v)})
		}
		args = append(args, ast.ObjectTerm(kv...))
	}
	rt.arguments = ast.ArrayTerm(args...)
	var ann ast.Value = ast.NewObject()
	if t.Annotations != nil {
		v, err := exactjson.GoValue(t.Annotations)
		if err != nil {
			return rt, fmt.Errorf("tool %s: annotations: %w", t.Name, err)
		}
		ann = v
	}
	rt.annotations = ast.NewTerm(ann)
	rt.upstream, rt.upstreamAnnotations = ast.NullTerm(), ast.NullTerm()
	if server := t.Upstream(); server != "" {
		rt.upstream = ast.StringTerm(server)
	}
	if t.Imported != nil {
		var up ast.Value = ast.NewObject()
		if t.Imported.Annotations != nil {
			v, err := exactjson.GoValue(t.Imported.Annotations)
			if err != nil {
				return rt, fmt.Errorf("tool %s: upstream annotations: %w", t.Name, err)
			}
			up = v
		}
		rt.upstreamAnnotations = ast.NewTerm(up)
	}
	return rt, nil
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
// by every decision for callers with the same roles. Its row objects are
// the revision's (rowObject), shared by every view: a view costs a few
// words per row.
type callerView struct {
	base  []bool
	tools *ast.Term // the tools array
	rows  []*ast.Term
	// promptBase is the base decision per imported prompt, prompts the
	// input.prompts array.
	promptBase []bool
	prompts    *ast.Term
}

// rowObject returns row i's object in input.tools with the given base
// flag. A row has one object per flag value for the whole revision, built
// on first use and frozen before it is shared.
func (r *Revision) rowObject(i int, base bool) *ast.Term {
	b := 0
	if base {
		b = 1
	}
	p := &r.rowObjects[b][i]
	if t := p.Load(); t != nil {
		return t
	}
	t := r.rowTerms[i].object(base)
	freeze(t.Value)
	if !p.CompareAndSwap(nil, t) {
		t = p.Load()
	}
	return t
}

// maxCallerViews bounds the per-revision cache of caller views; past it
// views are built per decision.
const maxCallerViews = 4096

type viewCache struct {
	mu    sync.RWMutex
	views map[string]*callerView
}

// roleKey is the canonical key of a caller's role set: the base decision
// depends on nothing else. Each role is length-prefixed, so no role's bytes
// (a NUL, a separator) can make two different sets share a key.
func roleKey(c *toolcall.Caller) string {
	roles := slices.Clone(c.Roles)
	slices.Sort(roles)
	roles = slices.Compact(roles)
	var b []byte
	for _, r := range roles {
		b = appendLenString(b, r) // as the fingerprint's strings
	}
	return string(b)
}

func (r *Revision) view(c *toolcall.Caller) *callerView {
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
		v.rows[i] = r.rowObject(i, v.base[i])
	}
	// An array holds nothing lazy; its row objects are frozen.
	v.tools = ast.ArrayTerm(v.rows...)
	r.viewPrompts(v, c)
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

// ErrInput is wrapped by every *InputError, for errors.Is.
var ErrInput = errors.New("the input document cannot represent the request")

// InputError says that part of a request or caller cannot be represented
// exactly in the input document (docs/contract.md §3): a number beyond OPA's range, a key
// sent twice, a string that is not valid Unicode, a claim that is not plain
// JSON. The decision then fails: no policy is asked about other values than
// those a method, a hook or an upstream server would get.
//
// It never holds the value itself: arguments and claims are not logged.
type InputError struct {
	// Part is the input document's path of the part: request.arguments,
	// request.meta or caller.claims.
	Part string
	// Err says why, and where inside the part.
	Err error
}

func (e *InputError) Error() string {
	return fmt.Sprintf("input document: %s cannot be represented exactly: %v", e.Part, e.Err)
}

func (e *InputError) Unwrap() []error { return []error{ErrInput, e.Err} }

// Parts of the input document an InputError names.
const (
	PartArguments = "request.arguments"
	PartMeta      = "request.meta"
	PartClaims    = "caller.claims"
	PartResult    = "result"
	PartHistory   = "history"
)

// CheckClaims reports whether claims can be represented exactly in the
// input document: an *InputError naming the claim otherwise (a float that is
// not finite, such as YAML's .inf, a number beyond OPA's range, a string that
// is not valid UTF-8, a value that is not plain JSON). Loaders of callers
// (a tokens file) call it to refuse such claims up front; a decision for a
// caller whose claims fail it fails.
func CheckClaims(claims map[string]any) error {
	_, err := claimsValue(claims)
	return err
}

func claimsValue(claims map[string]any) (ast.Value, error) {
	if len(claims) == 0 {
		return ast.NewObject(), nil
	}
	v, err := exactjson.GoValue(claims)
	if err != nil {
		return nil, &InputError{Part: PartClaims, Err: err}
	}
	return v, nil
}

func callerTerm(c *toolcall.Caller) (*ast.Term, error) {
	if c == nil {
		return ast.NullTerm(), nil
	}
	roles := make([]*ast.Term, len(c.Roles))
	for i, r := range c.Roles {
		roles[i] = ast.StringTerm(r)
	}
	claims, err := claimsValue(c.Claims)
	if err != nil {
		return nil, err
	}
	return ast.ObjectTerm(
		[2]*ast.Term{keySubject, ast.StringTerm(c.Subject)},
		[2]*ast.Term{keyRoles, ast.ArrayTerm(roles...)},
		[2]*ast.Term{keyClaims, ast.NewTerm(claims)},
	), nil
}

// argumentsValue normalises the arguments as sent: anything but a JSON
// object is {}. An object is converted exactly or not at all: a number
// beyond OPA's range, a key sent twice, a lone surrogate escape or invalid
// UTF-8 anywhere inside it (also under an argument the row does not
// declare) is an *InputError, never another object.
func argumentsValue(raw json.RawMessage) (ast.Value, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return ast.NewObject(), nil
	}
	v, err := exactjson.Value(trimmed)
	if err != nil {
		var xe *exactjson.Error
		if errors.As(err, &xe) && xe.Reason == exactjson.ReasonSyntax {
			// Not JSON at all is not an object: {} as for any non-object
			// (the adapter passes the same {} to the binder).
			return ast.NewObject(), nil
		}
		return nil, &InputError{Part: PartArguments, Err: err}
	}
	return v, nil
}

// CheckArguments reports whether the arguments of a call can be represented
// exactly in the input document; an *InputError otherwise. Grant runs it for
// every call, also when it answers from the decision cache. It refuses what
// argumentsValue refuses, with the same error, without building the value
// (and, for common arguments, without an allocation).
func CheckArguments(raw json.RawMessage) error {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil
	}
	err := exactjson.Check(trimmed)
	if err == nil {
		return nil
	}
	var xe *exactjson.Error
	if errors.As(err, &xe) && xe.Reason == exactjson.ReasonSyntax {
		return nil // not JSON at all: {} (see argumentsValue)
	}
	return &InputError{Part: PartArguments, Err: err}
}

// input builds the input document of one decision. tool, when not nil, is
// the index of the resolved row, added as "tool" for the call rules. It
// fails with an *InputError when a part cannot be represented exactly.
func (r *Revision) input(c *toolcall.Caller, v *callerView, req *Request, tool int) (ast.Value, error) {
	reqKV := [][2]*ast.Term{{keyMethod, ast.StringTerm(req.Method)}}
	switch req.Method {
	case MethodCall:
		args, err := argumentsValue(req.Arguments)
		if err != nil {
			return nil, err
		}
		reqKV = append(reqKV,
			[2]*ast.Term{keyTool, ast.StringTerm(req.Tool)},
			[2]*ast.Term{keyArguments, ast.NewTerm(args)},
		)
	case MethodList:
	default:
		var err error
		if reqKV, err = catalogRequest(reqKV, req); err != nil {
			return nil, err
		}
	}
	meta, err := metaAST(req.Meta)
	if err != nil {
		return nil, &InputError{Part: PartMeta, Err: err}
	}
	reqKV = append(reqKV, [2]*ast.Term{keyMeta, ast.NewTerm(meta)})
	caller, err := callerTerm(c)
	if err != nil {
		return nil, err
	}
	tools, prompts := ast.ArrayTerm(), ast.ArrayTerm()
	if v != nil {
		tools, prompts = v.tools, v.prompts
	}
	kv := [][2]*ast.Term{
		{keyCaller, caller},
		{keyTools, tools},
		{keyPrompts, prompts},
		{keyRequest, ast.ObjectTerm(reqKV...)},
	}
	if tool >= 0 && v != nil {
		kv = append(kv, [2]*ast.Term{keyTool, v.rows[tool]})
	}
	if req.History != nil {
		h, err := historyTerm(req.History, r.historyTerms)
		if err != nil {
			return nil, &InputError{Part: PartHistory, Err: err}
		}
		kv = append(kv, [2]*ast.Term{keyHistory, h})
	}
	return ast.NewObject(kv...), nil
}

// InputDocument returns, as JSON, the input document the revision builds for
// a caller and request (and, for call rules, the named tool). It is what
// policy authors read and what schema/input.schema.json describes.
func (r *Revision) InputDocument(c *toolcall.Caller, req Request, withTool bool) ([]byte, error) {
	var v *callerView
	if c != nil {
		v = r.view(c)
	}
	idx := -1
	if withTool {
		idx = r.ToolIndex(req.Tool)
	}
	in, err := r.input(c, v, &req, idx)
	if err != nil {
		return nil, err
	}
	doc, err := ast.JSON(in)
	if err != nil {
		return nil, err
	}
	return json.Marshal(doc)
}
