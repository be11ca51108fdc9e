package methods

import (
	"context"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolgate/toolgate/toolcall"
)

// Invocation runs a bound call. Anything it returns as an error, or any
// panic inside it, is a failure inside the tool.
type Invocation func(ctx context.Context) (*mcp.CallToolResult, error)

// Method is something a registry row's method names: a Go tool method or a
// tool of an upstream MCP server.
type Method interface {
	// HasArgument reports whether the method takes an argument of that name.
	HasArgument(name string) bool
	// Bind turns validated arguments into an invocation. A value the
	// method's parameter cannot hold is an *ArgumentError (ArgInvalid).
	Bind(args []toolcall.Arg) (Invocation, error)
}

// Set resolves a registry row's method name to a Method.
type Set interface {
	Method(name string) (Method, bool)
}

// Map is a Set of Go tool methods, keyed by name. Register methods before
// serving; lookups are then safe for concurrent use.
type Map map[string]Method

// Method implements Set.
func (m Map) Method(name string) (Method, bool) {
	x, ok := m[name]
	return x, ok
}

// Register adds a Go tool method. fn must be a function
//
//	func(ctx context.Context, args T) (R, error)
//
// where T is a struct whose exported fields are the method's arguments,
// named by their `json` tag (or the field name), and R is a string (text
// content), a *mcp.CallToolResult (returned as is) or any other value
// (returned as its JSON text). Register panics on any other shape: that is
// a programmer's mistake, found at start-up.
func (m Map) Register(name string, fn any) {
	if _, dup := m[name]; dup {
		panic(fmt.Sprintf("methods: method %q registered twice", name))
	}
	gm, err := newGoMethod(fn)
	if err != nil {
		panic(fmt.Sprintf("methods: method %q: %v", name, err))
	}
	m[name] = gm
}

// goMethod is a Go function read by reflection.
type goMethod struct {
	fn     reflect.Value
	args   reflect.Type
	fields map[string]int // argument name → field index
	// prompt: no type in the parameter decodes itself (a json.Unmarshaler
	// or encoding.TextUnmarshaler could wait), so Bind never waits.
	prompt bool
}

// BindsPromptly reports whether m's Bind never waits: a Go method whose
// parameter holds only types encoding/json decodes by itself. The adapter
// binds such a method on the call's goroutine, another behind its guard.
func BindsPromptly(m Method) bool {
	g, ok := m.(*goMethod)
	return ok && g.prompt
}

var (
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// plainDecoded reports whether decoding into t runs no code of t's: no
// type in it implements json.Unmarshaler or encoding.TextUnmarshaler.
func plainDecoded(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] {
		return true
	}
	seen[t] = true
	for _, u := range []reflect.Type{jsonUnmarshalerType, textUnmarshalerType} {
		if t.Implements(u) || reflect.PointerTo(t).Implements(u) {
			return false
		}
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return plainDecoded(t.Elem(), seen)
	case reflect.Map:
		return plainDecoded(t.Key(), seen) && plainDecoded(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			if !plainDecoded(t.Field(i).Type, seen) {
				return false
			}
		}
	}
	return true
}

var (
	ctxType    = reflect.TypeFor[context.Context]()
	errType    = reflect.TypeFor[error]()
	resultType = reflect.TypeFor[*mcp.CallToolResult]()
)

func newGoMethod(fn any) (*goMethod, error) {
	v := reflect.ValueOf(fn)
	t := v.Type()
	if t.Kind() != reflect.Func || t.NumIn() != 2 || t.NumOut() != 2 ||
		t.In(0) != ctxType || t.In(1).Kind() != reflect.Struct || t.Out(1) != errType {
		return nil, fmt.Errorf("want func(context.Context, struct) (R, error), got %s", t)
	}
	gm := &goMethod{fn: v, args: t.In(1), fields: map[string]int{}}
	for i := range gm.args.NumField() {
		f := gm.args.Field(i)
		if !f.IsExported() {
			continue
		}
		if name, ok := jsonName(f); ok {
			gm.fields[name] = i
		}
	}
	gm.prompt = plainDecoded(gm.args, map[reflect.Type]bool{})
	return gm, nil
}

func (g *goMethod) HasArgument(name string) bool {
	_, ok := g.fields[name]
	return ok
}

func (g *goMethod) Bind(args []toolcall.Arg) (Invocation, error) {
	pv := reflect.New(g.args)
	for _, a := range args {
		i, ok := g.fields[a.Name]
		if !ok {
			return nil, &toolcall.ArgumentError{Problem: toolcall.ArgUnknown, Name: a.Name}
		}
		f := pv.Elem().Field(i)
		if foldedKey(f.Type(), a.Value) {
			return nil, &toolcall.ArgumentError{Problem: toolcall.ArgInvalid, Name: a.Name, Err: fmt.Errorf("an object key matches a field of the method's parameter of Go type %s only case-insensitively", f.Type())}
		}
		if err := json.Unmarshal(a.Value, f.Addr().Interface()); err != nil {
			// The decoder's text may quote the value; argument values are
			// not logged, so say only what the value had to fit.
			return nil, &toolcall.ArgumentError{Problem: toolcall.ArgInvalid, Name: a.Name, Err: fmt.Errorf("the value does not fit the method's parameter of Go type %s", f.Type())}
		}
	}
	return func(ctx context.Context) (*mcp.CallToolResult, error) {
		out := g.fn.Call([]reflect.Value{reflect.ValueOf(ctx), pv.Elem()})
		if err, _ := out[1].Interface().(error); err != nil {
			return nil, err
		}
		return toResult(out[0])
	}, nil
}

// toResult renders a Go method's return value as a CallToolResult.
func toResult(v reflect.Value) (*mcp.CallToolResult, error) {
	if v.Type() == resultType {
		res := v.Interface().(*mcp.CallToolResult)
		if res == nil {
			return nil, errors.New("method returned a nil result")
		}
		return res, nil
	}
	if v.Kind() == reflect.String {
		return textResult(v.String()), nil
	}
	b, err := json.Marshal(v.Interface())
	if err != nil {
		return nil, fmt.Errorf("encode method result: %w", err)
	}
	return textResult(string(b)), nil
}

// textResult is a CallToolResult with one text content item.
func textResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// foldedKey reports whether raw, a JSON value about to be decoded into a
// value of type t, has an object key that encoding/json would match to a
// struct field only case-insensitively ("URL" for a field named "url"). The
// policy sees that key as it is, the method would get it as the field: with
// both "url" and "URL" sent, the policy reads one value and the method the
// other. Such a value is refused rather than given to the method.
func foldedKey(t reflect.Type, raw json.RawMessage) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil {
			return false
		}
		fields := jsonFields(t)
		for k, v := range obj {
			if ft, ok := fields[k]; ok {
				if foldedKey(ft, v) {
					return true
				}
				continue
			}
			for name := range fields {
				if strings.EqualFold(name, k) {
					return true
				}
			}
		}
	case reflect.Slice, reflect.Array:
		var elems []json.RawMessage
		if json.Unmarshal(raw, &elems) != nil {
			return false
		}
		for _, e := range elems {
			if foldedKey(t.Elem(), e) {
				return true
			}
		}
	case reflect.Map:
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil {
			return false
		}
		for _, v := range obj {
			if foldedKey(t.Elem(), v) {
				return true
			}
		}
	}
	return false
}

// jsonName is the name the field f has in JSON: its json tag's, else its
// own; false when the tag leaves it out ("-").
func jsonName(f reflect.StructField) (string, bool) {
	switch tag, _, _ := strings.Cut(f.Tag.Get("json"), ","); tag {
	case "-":
		return "", false
	case "":
		return f.Name, true
	default:
		return tag, true
	}
}

// jsonFields maps the JSON names encoding/json decodes into a struct type
// (promoted fields of embedded structs included) to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for _, f := range reflect.VisibleFields(t) {
		if !f.IsExported() || f.Anonymous && f.Type.Kind() == reflect.Struct {
			continue
		}
		if name, ok := jsonName(f); ok {
			out[name] = f.Type
		}
	}
	return out
}
