// Package schema holds toolgate's JSON Schemas, embedded in the binary:
// registry.schema.json (the registry document, docs/contract.md §1), input.schema.json
// (the policy input document, docs/contract.md §3) when present, and types/<Name>.json,
// one per internal argument type such as Money.
//
// Every embedded file is known to the compiler under BaseURL plus its file
// name, so a schema may $ref another by a relative reference
// ("types/Money.json") or by its absolute $id. Nothing is ever fetched from
// the network or the file system.
//
//	sch, err := schema.Compile("types/Money.json")
//	if err != nil { ... }
//	err = sch.Validate(map[string]any{"amount": "12.50", "currency": "EUR"})
//
// All functions are safe for concurrent use.
package schema

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// FS holds the embedded schema files, by file name relative to this package
// ("registry.schema.json", "types/Money.json").
//
//go:embed *.json types/*.json
var FS embed.FS

// BaseURL is the URL every embedded file is known by to the compiler: file
// "types/Money.json" is BaseURL+"types/Money.json". Schemas declare it in
// their $id.
const BaseURL = "https://toolgate.dev/schema/"

// typesDir is where internal types live inside FS.
const typesDir = "types"

// ErrNotFound is returned (wrapped) by Compile for a name that is not an
// embedded file.
var ErrNotFound = errors.New("schema: no such embedded schema")

type compiled struct {
	schema *jsonschema.Schema
	err    error
}

var (
	mu    sync.Mutex
	cache = map[string]compiled{}
)

// Compile compiles the embedded schema file name (for example
// "registry.schema.json" or "types/Money.json"). The result, or the error,
// is cached: the embedded files never change. A *jsonschema.Schema is safe
// for concurrent Validate calls.
func Compile(name string) (*jsonschema.Schema, error) {
	if !fs.ValidPath(name) || !strings.HasSuffix(name, ".json") {
		return nil, fmt.Errorf("%w: %q", ErrNotFound, name)
	}
	if _, err := fs.Stat(FS, name); err != nil {
		// Not cached: only embedded names may grow the cache.
		return nil, fmt.Errorf("%w: %q", ErrNotFound, name)
	}
	mu.Lock()
	defer mu.Unlock()
	if c, ok := cache[name]; ok {
		return c.schema, c.err
	}
	s, err := compile(name)
	cache[name] = compiled{s, err}
	return s, err
}

func compile(name string) (*jsonschema.Schema, error) {
	s, err := newCompiler().Compile(BaseURL + name)
	if err != nil {
		return nil, fmt.Errorf("schema: compiling %s: %w", name, err)
	}
	return s, nil
}

// TypeNames returns the names of the internal types (the files
// types/<Name>.json), sorted. The slice is the caller's.
func TypeNames() []string {
	entries, err := FS.ReadDir(typesDir)
	if err != nil {
		return nil
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		if n, ok := strings.CutSuffix(e.Name(), ".json"); ok && !e.IsDir() {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names
}

// IsType reports whether name is an internal type.
func IsType(name string) bool {
	_, ok := TypeSchema(name)
	return ok
}

// TypeSchema returns the raw JSON Schema document of the internal type
// name, and whether it exists. The bytes are a fresh copy, the caller's.
func TypeSchema(name string) (json.RawMessage, bool) {
	if name == "" || strings.ContainsAny(name, `/\`) || name == "." || name == ".." {
		return nil, false
	}
	data, err := FS.ReadFile(TypeFile(name))
	if err != nil {
		return nil, false
	}
	return json.RawMessage(bytes.Clone(data)), true
}

// TypeFile returns the embedded file name of the internal type name, the
// name Compile takes: "types/Money.json".
func TypeFile(name string) string {
	return path.Join(typesDir, name+".json")
}

// CompileValue compiles a JSON Schema given as a JSON-compatible value (maps
// with string keys, slices, strings, bools, nil, json.Number or float64), as
// [registry.Tool.InputSchema] returns one. A $ref in it resolves only to the
// embedded files, by absolute URL under BaseURL; nothing is fetched. The
// result is not cached.
func CompileValue(v any) (*jsonschema.Schema, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("schema: encoding the schema: %w", err)
	}
	c := newCompiler()
	const url = BaseURL + "inline.json"
	if err := c.AddResource(url, bytes.NewReader(data)); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	return s, nil
}

// newCompiler returns a 2020-12 compiler that resolves the embedded files by
// their URL under BaseURL and nothing else: a $ref elsewhere is a mistake in
// a schema, never a network or file-system fetch.
func newCompiler() *jsonschema.Compiler {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.LoadURL = func(u string) (io.ReadCloser, error) {
		name, ok := strings.CutPrefix(u, BaseURL)
		if !ok || !fs.ValidPath(name) {
			return nil, fmt.Errorf("%w: %s is not embedded", ErrNotFound, u)
		}
		data, err := FS.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("%w: %s is not embedded", ErrNotFound, u)
		}
		return io.NopCloser(bytes.NewReader(data)), nil
	}
	return c
}
