package mcpadapter

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/schema"
)

// revisionCache is what the adapter derives from one revision: the listing's
// tool descriptors and the compiled argument schemas, built once and shared
// by every call that reads that revision.
type revisionCache struct {
	rev   *engine.Revision
	tools []*mcp.Tool // descriptor per row, registry order
	wire  []json.RawMessage
	rows  []rowSchemas
}

type rowSchemas struct {
	once sync.Once
	args []*jsonschema.Schema
	err  error
}

func newRevisionCache(rev *engine.Revision) *revisionCache {
	reg := rev.Registry()
	rc := &revisionCache{rev: rev, tools: make([]*mcp.Tool, len(reg.Tools)), wire: make([]json.RawMessage, len(reg.Tools)), rows: make([]rowSchemas, len(reg.Tools))}
	for i := range reg.Tools {
		rc.tools[i] = descriptor(&reg.Tools[i])
		rc.wire[i] = wireDescriptor(&reg.Tools[i])
	}
	return rc
}

// wireDescriptor renders a row as tools/list sends it: like descriptor,
// but with the row's annotations passed through exactly (the SDK's typed
// ToolAnnotations would drop unknown keys and add false hints).
func wireDescriptor(t *registry.Tool) json.RawMessage {
	b, err := json.Marshal(struct {
		Name        string         `json:"name"`
		Title       string         `json:"title,omitempty"`
		Description string         `json:"description,omitempty"`
		InputSchema map[string]any `json:"inputSchema"`
		Annotations map[string]any `json:"annotations,omitempty"`
	}{t.Name, t.Title, t.Description, t.InputSchema(), t.Annotations})
	if err != nil {
		b, _ = json.Marshal(descriptor(t)) // not reached: the registry holds JSON values
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
	if len(t.Annotations) > 0 {
		var ann mcp.ToolAnnotations
		if b, err := json.Marshal(t.Annotations); err == nil && json.Unmarshal(b, &ann) == nil {
			d.Annotations = &ann
		}
	}
	return d
}

// argSchemas compiles, once per row and revision, each argument's schema.
func (rc *revisionCache) argSchemas(i int) ([]*jsonschema.Schema, error) {
	rs := &rc.rows[i]
	rs.once.Do(func() {
		t := &rc.rev.Registry().Tools[i]
		for j, s := range t.ArgumentSchemas() {
			cs, err := schema.CompileValue(s)
			if err != nil {
				rs.err = fmt.Errorf("tool %s argument %s: compile schema: %w", t.Name, t.Arguments[j].Name, err)
				return
			}
			rs.args = append(rs.args, cs)
		}
	})
	return rs.args, rs.err
}

// bind validates the arguments as sent against the row, argument by
// argument in declared order, and returns them ready for the method: sent
// or defaulted values of declared arguments only. The first wrong argument
// is named; its text comes from the row, never from the validator.
func bind(t *registry.Tool, schemas []*jsonschema.Schema, m Method, raw json.RawMessage) ([]Arg, error) {
	var sent map[string]json.RawMessage
	if trimmed := bytes.TrimSpace(raw); len(trimmed) > 0 && trimmed[0] == '{' {
		// The grant decision already read this object exactly (docs/contract.md §3);
		// reading it as no arguments at all would be another input.
		if err := json.Unmarshal(trimmed, &sent); err != nil {
			return nil, fmt.Errorf("read the arguments object: %w", err)
		}
	}
	args := make([]Arg, 0, len(t.Arguments))
	for j := range t.Arguments {
		a := &t.Arguments[j]
		argErr := func(p ArgumentProblem, err error) error { return argumentError(a, p, err) }
		if !m.HasArgument(a.Name) {
			return nil, argErr(ArgUnknown, fmt.Errorf("the method has no argument %q", a.Name))
		}
		v, ok := sent[a.Name]
		if !ok {
			switch {
			case a.Required:
				return nil, argErr(ArgMissing, nil)
			case a.Default != nil:
				v = a.Default
			default:
				continue
			}
		}
		val, err := decodeValue(v)
		if err != nil {
			return nil, argErr(ArgInvalid, err)
		}
		// The validator panics on numbers it cannot represent (a huge
		// exponent makes big.Rat refuse the value): a value it cannot take.
		if err := safely(func() error { return schemas[j].Validate(val) }); err != nil {
			var pe *PanicError
			if errors.As(err, &pe) {
				return nil, argErr(ArgInvalid, errors.New("the validator could not read the value"))
			}
			return nil, argErr(ArgInvalid, violation(err))
		}
		args = append(args, Arg{Name: a.Name, Value: v})
	}
	return args, nil
}

// decodeValue decodes an argument's JSON value for the validator, numbers
// as json.Number. A string without escapes, control characters or invalid
// UTF-8 (what string arguments mostly are) is its bytes between the quotes:
// that is what the decoder makes of it, without a decoder.
// FuzzDecodeValue checks the two against each other.
func decodeValue(v json.RawMessage) (any, error) {
	if plainString(v) {
		return string(v[1 : len(v)-1]), nil
	}
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	var val any
	if err := dec.Decode(&val); err != nil {
		return nil, err
	}
	return val, nil
}

// plainString reports whether v is exactly one JSON string whose bytes
// decode to themselves.
func plainString(v []byte) bool {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return false
	}
	inner := v[1 : len(v)-1]
	for _, c := range inner {
		if c < 0x20 || c == '"' || c == '\\' {
			return false
		}
	}
	return utf8.Valid(inner)
}

// SchemaViolation says which keywords of an argument's schema a value
// failed. Unlike the validator's own message it never quotes the value:
// argument values are not logged.
type SchemaViolation struct {
	Keywords []string
}

func (v *SchemaViolation) Error() string {
	return "the value fails the schema at " + strings.Join(v.Keywords, ", ")
}

func violation(err error) error {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return errors.New("the value fails its schema")
	}
	var kws []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			kws = append(kws, e.KeywordLocation)
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	return &SchemaViolation{Keywords: kws}
}
