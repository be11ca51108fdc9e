package mcpadapter

import (
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/internal/jsonx"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/schema"
)

// revisionCache is what the adapter derives from one revision: the
// listing's wire descriptors and the compiled argument schemas, built once
// and shared by every call that reads that revision. Each part is built on
// first use: a call needs only its row's schemas, a listing only the wire
// descriptors, and only List (the API, not the served path) the SDK's
// descriptors. Rows that declare the same arguments share one rendered
// inputSchema and one set of compiled schemas: in a large registry most
// rows do.
type revisionCache struct {
	rev *engine.Revision

	wireOnce sync.Once
	wire     []json.RawMessage // per row, registry order, as tools/list sends it

	toolsOnce sync.Once
	tools     []*mcp.Tool // per row, registry order; List's

	rowSets []atomic.Pointer[argSet] // per row: its arguments' compiled schemas, once looked up

	mu       sync.Mutex
	sets     map[string]*argSet            // by argumentsKey
	compiled map[string]*jsonschema.Schema // by argumentKey, one per distinct argument schema
}

// argSet is the compiled schemas of one declaration of arguments, in
// declared order, shared by the rows declaring it.
type argSet struct {
	once sync.Once
	args []*jsonschema.Schema
	bad  int   // with err: the argument whose schema did not compile; -1: a listed row's inputSchema
	err  error // without the row's name: argSchemas adds it
}

func newRevisionCache(rev *engine.Revision) *revisionCache {
	return &revisionCache{rev: rev, rowSets: make([]atomic.Pointer[argSet], len(rev.Registry().Tools))}
}

// cacheOf returns the derived cache of rev: the adapter's when it is of rev,
// else one built now, which the adapter keeps when rev is the current
// revision. Concurrent first requests of a revision build one cache: a
// large listing renders many megabytes on the way, and one per request in
// flight would be most of the server's peak memory.
func (a *Adapter) cacheOf(rev *engine.Revision) *revisionCache {
	if rc := a.cache.Load(); rc != nil && rc.rev == rev {
		return rc
	}
	a.cacheMu.Lock()
	defer a.cacheMu.Unlock()
	if rc := a.cache.Load(); rc != nil && rc.rev == rev {
		return rc
	}
	rc := newRevisionCache(rev)
	if rev == a.opts.Revisions.Current() {
		a.cache.Store(rc)
	}
	return rc
}

// wires returns every row's wire descriptor, rendering them on first use.
func (rc *revisionCache) wires() []json.RawMessage {
	rc.wireOnce.Do(func() {
		tools := rc.rev.Registry().Tools
		rc.wire = make([]json.RawMessage, len(tools))
		schemas := map[string]json.RawMessage{} // inputSchema by argumentsKey
		var key []byte
		for i := range tools {
			t := &tools[i]
			key = appendArgumentsKey(key[:0], t)
			s, ok := schemas[string(key)]
			if !ok {
				var err error
				if s, err = jsonx.Marshal(t.InputSchema()); err != nil {
					s = nil // not reached: the registry holds JSON values; wireDescriptor falls back
				}
				schemas[string(key)] = s
			}
			rc.wire[i] = wireDescriptor(t, s)
		}
	})
	return rc.wire
}

// descriptors returns every row's SDK descriptor, built on first use.
func (rc *revisionCache) descriptors() []*mcp.Tool {
	rc.toolsOnce.Do(func() {
		tools := rc.rev.Registry().Tools
		rc.tools = make([]*mcp.Tool, len(tools))
		for i := range tools {
			rc.tools[i] = descriptor(&tools[i])
		}
	})
	return rc.tools
}

// wireDescriptor renders a row as tools/list sends it: like descriptor,
// but with the row's annotations passed through exactly (the SDK's typed
// ToolAnnotations would drop unknown keys and add false hints). inputSchema
// is the row's InputSchema rendered (shared by rows that declare the same
// arguments); nil renders it here.
func wireDescriptor(t *registry.Tool, inputSchema json.RawMessage) json.RawMessage {
	if b := listedWire(t); b != nil {
		return b
	}
	if inputSchema == nil {
		b, err := jsonx.Marshal(t.InputSchema())
		if err != nil {
			b, _ = json.Marshal(descriptor(t)) // not reached: the registry holds JSON values
			return b
		}
		inputSchema = b
	}
	w := struct {
		Meta         json.RawMessage `json:"_meta,omitempty"`
		Name         string          `json:"name"`
		Title        string          `json:"title,omitempty"`
		Description  string          `json:"description,omitempty"`
		InputSchema  json.RawMessage `json:"inputSchema"`
		OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
		Icons        json.RawMessage `json:"icons,omitempty"`
		Annotations  map[string]any  `json:"annotations,omitempty"`
	}{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: inputSchema, Annotations: t.Annotations}
	if imp := t.Imported; imp != nil {
		w.Meta, w.OutputSchema, w.Icons = imp.Meta, imp.OutputSchema, imp.Icons
	}
	b, err := jsonx.Marshal(w)
	if err != nil {
		b, _ = json.Marshal(descriptor(t)) // not reached: the registry holds JSON values
	}
	return b
}

// listedWire renders an imported row whose definition the upstream
// listed as the upstream sent it (docs/contract.md §19): every member,
// those the SDK's Tool does not hold (execution, a later revision's)
// included, under the row's name and with the row's annotations (the
// upstream's only when the operator trusts them, docs/contract.md §15).
// nil when the row has no such definition.
func listedWire(t *registry.Tool) json.RawMessage {
	if t.Imported == nil || len(t.Imported.Definition) == 0 {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(t.Imported.Definition, &m) != nil || m == nil {
		return nil // not reached: the upstream's listing decoded
	}
	var err error
	if m["name"], err = jsonx.Marshal(t.Name); err != nil {
		return nil
	}
	delete(m, "annotations")
	if len(t.Annotations) > 0 {
		if m["annotations"], err = jsonx.Marshal(t.Annotations); err != nil {
			return nil
		}
	}
	b, err := jsonx.Marshal(m)
	if err != nil {
		return nil
	}
	return b
}

// descriptor renders a row as tools/list shows it. Its inputSchema comes
// from registry.Tool.InputSchema, the function the binder's schemas come
// from too.
func descriptor(t *registry.Tool) *mcp.Tool {
	d := &mcp.Tool{
		Name:        t.Name,
		Title:       t.Title,
		Description: t.Description,
		InputSchema: t.InputSchema(),
	}
	if imp := t.Imported; imp != nil {
		if imp.OutputSchema != nil {
			d.OutputSchema = json.RawMessage(imp.OutputSchema)
		}
		if imp.Icons != nil {
			_ = json.Unmarshal(imp.Icons, &d.Icons) // the upstream's icons, decoded by the SDK before
		}
		if imp.Meta != nil {
			_ = json.Unmarshal(imp.Meta, &d.Meta)
		}
	}
	if len(t.Annotations) > 0 {
		var ann mcp.ToolAnnotations
		if b, err := json.Marshal(t.Annotations); err == nil && json.Unmarshal(b, &ann) == nil {
			d.Annotations = &ann
		}
	}
	return d
}

// argSchemas compiles, once per distinct declaration of arguments and
// revision, each argument's schema; for a listed row (registry.Tool.Listed),
// its one inputSchema.
func (rc *revisionCache) argSchemas(i int) ([]*jsonschema.Schema, error) {
	t := &rc.rev.Registry().Tools[i]
	set := rc.rowSets[i].Load()
	if set == nil {
		set = rc.argSet(t)
		rc.rowSets[i].Store(set)
	}
	set.once.Do(func() {
		if t.Listed() {
			// One schema, the upstream's as listed, in the dialect it declares.
			cs, _, err := schema.CompileListed(t.InputSchema())
			if err != nil {
				set.bad, set.err = -1, err
				return
			}
			set.args = []*jsonschema.Schema{cs}
			return
		}
		for j := range t.Arguments {
			cs, err := rc.compile(&t.Arguments[j])
			if err != nil {
				set.bad, set.err = j, err
				return
			}
			set.args = append(set.args, cs)
		}
	})
	if set.err != nil && set.bad < 0 {
		return nil, fmt.Errorf("tool %s: compile its inputSchema: %w", t.Name, set.err)
	}
	if set.err != nil {
		return nil, fmt.Errorf("tool %s argument %s: compile schema: %w", t.Name, t.Arguments[set.bad].Name, set.err)
	}
	return set.args, nil
}

// argSet returns the shared set of t's arguments.
func (rc *revisionCache) argSet(t *registry.Tool) *argSet {
	key := string(appendArgumentsKey(nil, t))
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.sets == nil {
		rc.sets = map[string]*argSet{}
	}
	set, ok := rc.sets[key]
	if !ok {
		set = &argSet{}
		rc.sets[key] = set
	}
	return set
}

// compile returns the compiled schema of a, shared by every argument of
// the revision with the same schema.
func (rc *revisionCache) compile(a *registry.Argument) (*jsonschema.Schema, error) {
	key := string(appendArgumentKey(nil, a))
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if cs, ok := rc.compiled[key]; ok {
		return cs, nil
	}
	cs, err := schema.CompileValue(a.Schema())
	if err != nil {
		return nil, err
	}
	if rc.compiled == nil {
		rc.compiled = map[string]*jsonschema.Schema{}
	}
	rc.compiled[key] = cs
	return cs, nil
}

// appendArgumentsKey appends a key of the row's declared arguments: equal
// keys mean equal InputSchema and equal argument schemas. Every field is
// length-prefixed and absence is kept apart from emptiness.
func appendArgumentsKey(b []byte, t *registry.Tool) []byte {
	if t.Listed() {
		return appendKeyString(append(b, 'L'), string(t.Imported.InputSchema))
	}
	b = append(strconv.AppendInt(b, int64(len(t.Arguments)), 10), ';')
	for j := range t.Arguments {
		a := &t.Arguments[j]
		b = appendKeyString(b, a.Name)
		b = strconv.AppendBool(b, a.Required)
		b = appendArgumentKey(b, a)
	}
	return b
}

// appendArgumentKey appends a key of what Argument.Schema reads: equal keys
// mean equal schemas.
func appendArgumentKey(b []byte, a *registry.Argument) []byte {
	b = appendKeyString(b, a.Type)
	b = appendKeyString(b, a.Description)
	b = appendKeyRaw(b, a.Default)
	if a.Enum == nil {
		b = append(b, 'n')
	} else {
		b = append(strconv.AppendInt(append(b, '['), int64(len(a.Enum)), 10), ';')
		for _, e := range a.Enum {
			b = appendKeyRaw(b, e)
		}
	}
	for _, n := range []*json.Number{a.Minimum, a.Maximum} {
		if n == nil {
			b = append(b, 'n')
		} else {
			b = appendKeyString(append(b, 'v'), string(*n))
		}
	}
	b = appendKeyString(b, a.Pattern)
	return appendKeyRaw(b, a.Items)
}

func appendKeyString(b []byte, s string) []byte {
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, ':')
	return append(b, s...)
}

// appendKeyRaw keeps nil (absent) apart from a present value, even an
// empty one.
func appendKeyRaw(b []byte, r json.RawMessage) []byte {
	if r == nil {
		return append(b, 'n')
	}
	return appendKeyString(append(b, 'r'), string(r))
}
