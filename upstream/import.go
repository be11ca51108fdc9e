package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"regexp"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/pins"
	"github.com/toolgate/toolgate/registry"
	toolschema "github.com/toolgate/toolgate/schema"
)

var rowNameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

// ImportedRows lists, for each upstream configured with Import, its tools
// as registry rows, in configuration order and then the upstream's order:
//
//   - name NAME.TOOL, method upstream:NAME/TOOL, section Config.Section
//     (default upstream:NAME: granted to nobody until the registry's
//     sections list it, docs/contract.md §15);
//   - title, description, inputSchema, outputSchema, icons and _meta as
//     the upstream lists them (docs/contract.md §19);
//   - Imported: the upstream's name, the annotations it declares and the
//     definition as listed. The row's own annotations (what policies trust
//     and tools/list shows) are those only with Config.TrustAnnotations,
//     else none;
//   - arguments naming the inputSchema's top-level properties (see
//     listedArguments): calls are checked against the schema itself.
//
// A tool whose row would not be a valid registry row (a name longer than
// 128 characters or with other characters) or whose inputSchema cannot be
// checked (it does not compile: an unknown dialect, a $ref outside it) is
// skipped and logged. An upstream that
// cannot be reached within its Timeout contributes no rows and is logged:
// Options.ToolsChanged says when it comes up.
//
// Every row is returned, including those a registry row already names;
// MergeRows leaves those out.
//
// For upstreams configured with Pin, only tools whose definition matches
// its pin are imported (see Import); should the pins file not be readable,
// those upstreams contribute no rows (the error is logged; Import returns
// it).
func (p *Pool) ImportedRows(ctx context.Context) []registry.Tool {
	rows, err := p.Import(ctx)
	if err != nil {
		p.log.Error("upstream: import: pinned upstreams skipped", slog.Any("error", err))
	}
	return rows
}

// Import is ImportedRows for a revision build: it returns the rows and,
// when upstreams are pinned and the pins file (Options.Pins) cannot be
// read, parsed or written, an error naming it (docs/contract.md §15), with the rows of
// the unpinned upstreams only.
//
// A pinned upstream's tools are imported as follows. On its first import
// (the pins file does not list the upstream yet) every tool's definition
// is recorded in the pins file, and served. After that, a tool is imported
// only while its canonical definition hashes to its pin: one that drifted
// from its pin, or a tool without one, is left out — for every caller it
// is then a tool that does not exist — and logged (upstream and tool) and
// reported to Options.OnDrift once per definition seen; one whose
// definition returns to its pin is imported again.
func (p *Pool) Import(ctx context.Context) ([]registry.Tool, error) {
	listings := make([][]*mcp.Tool, len(p.order))
	defs := make([]map[string]json.RawMessage, len(p.order)) // as sent, by tool
	var wg sync.WaitGroup
	for i, name := range p.order {
		c := p.conns[name]
		if !c.cfg.Import {
			continue
		}
		wg.Go(func() {
			l, err := c.listed(ctx)
			switch {
			case errors.Is(err, errNotUp):
				p.log.Debug("upstream: import: not up; its tools come when it is", slog.String("upstream", name))
				return
			case err != nil:
				p.log.Error("upstream: import: tools unavailable", slog.String("upstream", name), slog.Any("error", err))
				return
			}
			listings[i], defs[i] = l.tools, l.defs
		})
	}
	wg.Wait()

	var (
		f       *pins.File
		pinsErr error
	)
	if p.pinning() {
		f, pinsErr = p.recordFirst(listings)
	}
	per := make([][]registry.Tool, len(p.order))
	for i, name := range p.order {
		c := p.conns[name]
		tools := listings[i]
		if c.cfg.Pin {
			if f == nil {
				continue
			}
			tools = p.pinned(name, tools, f)
		}
		for _, t := range tools {
			row, notes, err := importRow(&c.cfg, t, defs[i][t.Name])
			for _, n := range notes {
				p.log.Warn("upstream: import: "+n, slog.String("upstream", name), slog.String("tool", t.Name))
			}
			if err != nil {
				p.log.Warn("upstream: import: tool skipped", slog.String("upstream", name), slog.String("tool", t.Name), slog.Any("error", err))
				continue
			}
			per[i] = append(per[i], row)
		}
	}
	return slices.Concat(per...), pinsErr
}

// importRow turns an upstream tool into a registry row. notes are findings
// that do not refuse it; the row is validated as a registry would.
//
// The tool's definition is kept as listed (docs/contract.md §19): def,
// the definition as the upstream sent it (nil when it could not be read
// apart: t then stands for it), served whole; its inputSchema (the schema
// calls are checked against, compiled here once so that a schema toolgate
// cannot check is refused at import, not at every call), outputSchema,
// icons and _meta, every keyword kept. The annotations are those def
// declares, not the SDK's decoding of them (which writes the hints the
// upstream left out). The row's Arguments only name the schema's
// top-level properties for policies (see listedArguments).
func importRow(cfg *Config, t *mcp.Tool, def json.RawMessage) (registry.Tool, []string, error) {
	server := cfg.Name
	row := registry.Tool{
		Name:        cfg.prefix() + t.Name,
		Method:      MethodPrefix + server + "/" + t.Name,
		Section:     cfg.section(),
		Title:       t.Title,
		Description: t.Description,
		Remember:    slices.Clone(cfg.Remember[t.Name]),
	}
	if !rowNameRE.MatchString(row.Name) {
		return registry.Tool{}, nil, fmt.Errorf("row name %q does not match %s", row.Name, rowNameRE)
	}
	declared := declaredAnnotations(t, def)
	if cfg.TrustAnnotations {
		row.Annotations = declared
	}
	imp := &registry.Imported{Upstream: server, Annotations: declared}
	if len(def) > 0 {
		imp.Definition = bytes.Clone(def)
	}
	input := t.InputSchema
	if input == nil {
		input = map[string]any{"type": "object"} // not reached: the SDK refuses a tool without one
	}
	schema := plainObject(input)
	if schema == nil {
		return registry.Tool{}, nil, errors.New("inputSchema is not an object")
	}
	var err error
	if imp.InputSchema, err = json.Marshal(input); err != nil {
		return registry.Tool{}, nil, fmt.Errorf("inputSchema: %w", err)
	}
	_, skipped, err := toolschema.CompileListed(schema)
	if err != nil {
		return registry.Tool{}, nil, fmt.Errorf("inputSchema cannot be checked: %w", err)
	}
	var notes []string
	for _, at := range skipped {
		notes = append(notes, fmt.Sprintf("inputSchema %s: a regular expression Go cannot run is left to the upstream to check", at))
	}
	for _, f := range []struct {
		name string
		v    any
		dst  *json.RawMessage
		set  bool
	}{
		{"outputSchema", t.OutputSchema, &imp.OutputSchema, t.OutputSchema != nil},
		{"icons", t.Icons, &imp.Icons, t.Icons != nil},
		{"_meta", t.Meta, &imp.Meta, t.Meta != nil},
	} {
		if !f.set {
			continue
		}
		if *f.dst, err = json.Marshal(f.v); err != nil {
			return registry.Tool{}, notes, fmt.Errorf("%s: %w", f.name, err)
		}
	}
	// The row must load as a registry row would: validate it alone, without
	// what a registry file cannot hold.
	doc, err := json.Marshal(map[string]any{"tools": []registry.Tool{row}})
	if err == nil {
		_, err = registry.Parse(doc, registry.FormatJSON)
	}
	if err != nil {
		return registry.Tool{}, notes, fmt.Errorf("not a valid registry row: %w", err)
	}
	row.Arguments = listedArguments(schema)
	row.Imported = imp
	return row, notes, nil
}

// declaredAnnotations are the annotations an upstream tool declares: as
// def sends them when there is def, else as the SDK decoded them; nil
// when it declares none (or an empty object).
func declaredAnnotations(t *mcp.Tool, def json.RawMessage) map[string]any {
	var raw json.RawMessage
	if len(def) > 0 {
		var m struct {
			Annotations json.RawMessage `json:"annotations"`
		}
		if json.Unmarshal(def, &m) != nil {
			return nil // not reached: def decoded into t
		}
		raw = m.Annotations
	} else if t.Annotations != nil {
		b, err := json.Marshal(t.Annotations)
		if err != nil {
			return nil
		}
		raw = b
	}
	var declared map[string]any
	if len(raw) == 0 || json.Unmarshal(raw, &declared) != nil || len(declared) == 0 {
		return nil
	}
	return declared
}

// listedArguments names the top-level properties of an inputSchema, for
// input.tools[i].arguments: required ones first, in the order of
// "required" (those that "properties" lists), then the others by name (a
// decoded JSON object has no order). Type is the property's JSON Schema
// type in the registry's words (integer → int, number → float, boolean →
// bool, string, array, object) where the property's schema says "type" as
// one type, or as one type and "null"; else empty (anyOf and the like).
func listedArguments(schema map[string]any) []registry.Argument {
	props, _ := schema["properties"].(map[string]any)
	required := map[string]bool{}
	var names []string
	if rs, ok := schema["required"].([]any); ok {
		for _, r := range rs {
			if n, ok := r.(string); ok && !required[n] {
				required[n] = true
				if _, listed := props[n]; listed {
					names = append(names, n)
				}
			}
		}
	}
	for _, n := range slices.Sorted(maps.Keys(props)) {
		if !required[n] {
			names = append(names, n)
		}
	}
	args := make([]registry.Argument, 0, len(names))
	for _, n := range names {
		ps, _ := props[n].(map[string]any)
		args = append(args, registry.Argument{Name: n, Type: argumentType(ps), Required: required[n]})
	}
	return args
}

var jsonTypes = map[string]string{
	"integer": registry.TypeInt,
	"number":  registry.TypeFloat,
	"string":  registry.TypeString,
	"boolean": registry.TypeBool,
	"array":   registry.TypeArray,
	"object":  registry.TypeObject,
}

// argumentType is the registry's word for the one type a property's
// schema gives, or "".
func argumentType(s map[string]any) string {
	switch t := s["type"].(type) {
	case string:
		return jsonTypes[t]
	case []any:
		var kept []string
		for _, x := range t {
			if x != "null" {
				str, _ := x.(string)
				kept = append(kept, str)
			}
		}
		if len(kept) == 1 {
			return jsonTypes[kept[0]]
		}
	}
	return ""
}

// plainObject re-decodes a schema value (as the SDK decoded it, or as a
// server built it) into plain JSON values with exact numbers; nil when it is
// not an object.
func plainObject(v any) map[string]any {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if dec.Decode(&m) != nil {
		return nil
	}
	return m
}

// schemaProperties is the "properties" object of an inputSchema; nil when
// it has none.
func schemaProperties(v any) map[string]any {
	if m, ok := v.(map[string]any); ok {
		props, _ := m["properties"].(map[string]any)
		return props
	}
	props, _ := plainObject(v)["properties"].(map[string]any)
	return props
}

// MergeRows returns a new registry: reg's sections, history and rows, then the
// imported rows that no row already names — by name, or by method (a row
// routing upstream:NAME/TOOL under another name keeps that tool from being
// imported twice). reg and imported are not modified; rows are copied.
//
// The result is built the way a registry file is loaded (registry.Parse),
// so it has an index and warnings like any loaded registry (an imported
// row's section that sections does not list is such a warning: it grants
// nobody). That cannot fail for rows from ImportedRows; should it, the rows
// are returned in a Registry built by hand (still correct, looked up row
// by row). Rows keep their Imported (which a registry file cannot hold).
func MergeRows(reg *registry.Registry, imported []registry.Tool) *registry.Registry {
	out := &registry.Registry{}
	if reg != nil {
		out.Sections = maps.Clone(reg.Sections)
		out.Tools = slices.Clone(reg.Tools)
		if reg.History != nil {
			h := *reg.History
			out.History = &h
		}
	}
	names := make(map[string]bool, len(out.Tools))
	methods := make(map[string]bool)
	for _, t := range out.Tools {
		names[t.Name] = true
		methods[t.Method] = true
	}
	for _, t := range imported {
		if names[t.Name] || methods[t.Method] {
			continue
		}
		names[t.Name], methods[t.Method] = true, true
		out.Tools = append(out.Tools, t)
	}
	// A registry file cannot say a row is imported, nor name properties
	// without declaring them: parse the rows without both and give them
	// back, row by row (Parse keeps the order).
	plain := &registry.Registry{Sections: out.Sections, History: out.History, Tools: slices.Clone(out.Tools)}
	for i := range plain.Tools {
		if plain.Tools[i].Listed() {
			plain.Tools[i].Arguments = nil
		}
		plain.Tools[i].Imported = nil
	}
	if b, err := json.Marshal(plain); err == nil {
		if parsed, err := registry.Parse(b, registry.FormatJSON); err == nil && len(parsed.Tools) == len(out.Tools) {
			for i := range parsed.Tools {
				parsed.Tools[i].Imported = out.Tools[i].Imported
				if out.Tools[i].Listed() {
					parsed.Tools[i].Arguments = out.Tools[i].Arguments
				}
			}
			return parsed
		}
	}
	return out
}
