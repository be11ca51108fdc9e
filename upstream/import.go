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
)

var (
	rowNameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)
	argNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)
)

// ImportedRows lists, for each upstream configured with Import, its tools
// as registry rows, in configuration order and then the upstream's order:
//
//   - name NAME.TOOL, method upstream:NAME/TOOL, section Config.Section
//     (default upstream:NAME: granted to nobody until the registry's
//     sections list it, docs/contract.md §15);
//   - title (or the annotations' title) and description as the upstream
//     lists them;
//   - Imported: the upstream's name and the annotations it declares. The
//     row's own annotations (what policies trust and tools/list shows)
//     are those only with Config.TrustAnnotations, else none;
//   - arguments from the tool's inputSchema: see importArgument for the
//     mapping. Required properties come first, in the order of "required",
//     then the others by name (a decoded JSON object has no order).
//
// A tool whose row would not be a valid registry row (a name longer than
// 128 characters or with other characters, a required property that
// cannot be declared) is skipped and logged; so is an optional property
// that cannot be declared (the row then never sends it). An upstream that
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
	var wg sync.WaitGroup
	for i, name := range p.order {
		c := p.conns[name]
		if !c.cfg.Import {
			continue
		}
		wg.Go(func() {
			tools, err := c.listed(ctx)
			if err != nil {
				p.log.Error("upstream: import: tools unavailable", slog.String("upstream", name), slog.Any("error", err))
				return
			}
			listings[i] = tools
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
			row, notes, err := importRow(&c.cfg, t)
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
func importRow(cfg *Config, t *mcp.Tool) (registry.Tool, []string, error) {
	server := cfg.Name
	row := registry.Tool{
		Name:        cfg.prefix() + t.Name,
		Method:      MethodPrefix + server + "/" + t.Name,
		Section:     cfg.section(),
		Title:       t.Title,
		Description: t.Description,
	}
	if !rowNameRE.MatchString(row.Name) {
		return registry.Tool{}, nil, fmt.Errorf("row name %q does not match %s", row.Name, rowNameRE)
	}
	var declared map[string]any
	if t.Annotations != nil {
		if row.Title == "" {
			row.Title = t.Annotations.Title
		}
		if b, err := json.Marshal(t.Annotations); err == nil && json.Unmarshal(b, &declared) == nil && len(declared) > 0 {
			if cfg.TrustAnnotations {
				row.Annotations = declared
			}
		} else {
			declared = nil
		}
	}
	schema := plainObject(t.InputSchema)
	props, _ := schema["properties"].(map[string]any)
	required := map[string]bool{}
	var names []string
	if rs, ok := schema["required"].([]any); ok {
		for _, r := range rs {
			if n, ok := r.(string); ok && !required[n] {
				required[n] = true
				names = append(names, n)
			}
		}
	}
	for _, n := range slices.Sorted(maps.Keys(props)) {
		if !required[n] {
			names = append(names, n)
		}
	}
	var notes []string
	for _, n := range names {
		ps, _ := props[n].(map[string]any)
		arg, argNotes, err := importArgument(n, ps, required[n])
		for _, note := range argNotes {
			notes = append(notes, fmt.Sprintf("argument %s: %s", n, note))
		}
		if err != nil {
			if required[n] {
				return registry.Tool{}, notes, fmt.Errorf("required argument %q: %w", n, err)
			}
			notes = append(notes, fmt.Sprintf("argument %s dropped: %v", n, err))
			continue
		}
		row.Arguments = append(row.Arguments, arg)
	}
	// The row must load as a registry row would: validate it alone.
	doc, err := json.Marshal(map[string]any{"tools": []registry.Tool{row}})
	if err == nil {
		_, err = registry.Parse(doc, registry.FormatJSON)
	}
	if err != nil {
		return registry.Tool{}, notes, fmt.Errorf("not a valid registry row: %w", err)
	}
	row.Imported = &registry.Imported{Upstream: server, Annotations: declared}
	return row, notes, nil
}

// importArgument declares one inputSchema property as a row argument.
//
// JSON Schema type → argument type: integer → int, number → float,
// string, boolean → bool, array, object. A type list with "null" and one
// other type is that type (null is then refused by toolgate; leaving the
// argument out is the way to send nothing). Without "type", "properties"
// means object, "items" array, and an enum of strings string. Anything else
// (no type, several types, anyOf/oneOf only) cannot be declared: mapping it
// to object would refuse every value the upstream accepts that is not an
// object, so it is an error instead (the caller drops an optional argument,
// skips a tool that requires it).
//
// description, enum, minimum and maximum (numbers) and pattern (strings,
// when Go's regexp compiles it) are carried; default is not (the upstream
// applies its own), nor items or other keywords (the upstream validates
// them; an items schema may $ref definitions a row cannot carry).
func importArgument(name string, s map[string]any, required bool) (registry.Argument, []string, error) {
	if !argNameRE.MatchString(name) {
		return registry.Argument{}, nil, fmt.Errorf("name does not match %s", argNameRE)
	}
	if s == nil {
		return registry.Argument{}, nil, errors.New("no schema")
	}
	typ, err := argumentType(s)
	if err != nil {
		return registry.Argument{}, nil, err
	}
	a := registry.Argument{Name: name, Type: typ, Required: required}
	var notes []string
	if d, ok := s["description"].(string); ok {
		a.Description = d
	}
	if enum, ok := s["enum"].([]any); ok && len(enum) > 0 {
		for _, e := range enum {
			b, err := json.Marshal(e)
			if err != nil {
				return registry.Argument{}, notes, fmt.Errorf("enum: %w", err)
			}
			a.Enum = append(a.Enum, b)
		}
	}
	if typ == registry.TypeInt || typ == registry.TypeFloat {
		if n, ok := s["minimum"].(json.Number); ok {
			a.Minimum = &n
		}
		if n, ok := s["maximum"].(json.Number); ok {
			a.Maximum = &n
		}
	}
	if p, ok := s["pattern"].(string); ok && typ == registry.TypeString {
		if _, err := regexp.Compile(p); err != nil {
			notes = append(notes, fmt.Sprintf("pattern %q not carried: %v", p, err))
		} else {
			a.Pattern = p
		}
	}
	return a, notes, nil
}

var jsonTypes = map[string]string{
	"integer": registry.TypeInt,
	"number":  registry.TypeFloat,
	"string":  registry.TypeString,
	"boolean": registry.TypeBool,
	"array":   registry.TypeArray,
	"object":  registry.TypeObject,
}

func argumentType(s map[string]any) (string, error) {
	switch t := s["type"].(type) {
	case string:
		if typ, ok := jsonTypes[t]; ok {
			return typ, nil
		}
		return "", fmt.Errorf("type %q cannot be declared", t)
	case []any:
		var kept []string
		for _, x := range t {
			if x != "null" {
				str, _ := x.(string)
				kept = append(kept, str)
			}
		}
		if len(kept) == 1 {
			if typ, ok := jsonTypes[kept[0]]; ok {
				return typ, nil
			}
		}
		return "", fmt.Errorf("type %v cannot be declared", t)
	case nil:
		if _, ok := s["properties"]; ok {
			return registry.TypeObject, nil
		}
		if _, ok := s["items"]; ok {
			return registry.TypeArray, nil
		}
		if enum, ok := s["enum"].([]any); ok && len(enum) > 0 {
			allStrings := true
			for _, e := range enum {
				if _, ok := e.(string); !ok {
					allStrings = false
				}
			}
			if allStrings {
				return registry.TypeString, nil
			}
		}
		return "", errors.New("no type")
	}
	return "", fmt.Errorf("type %v cannot be declared", s["type"])
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

// MergeRows returns a new registry: reg's sections and rows, then the
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
	// A registry file cannot say a row is imported: parse the rows without
	// it and give it back, row by row (Parse keeps the order).
	plain := &registry.Registry{Sections: out.Sections, Tools: slices.Clone(out.Tools)}
	for i := range plain.Tools {
		plain.Tools[i].Imported = nil
	}
	if b, err := json.Marshal(plain); err == nil {
		if parsed, err := registry.Parse(b, registry.FormatJSON); err == nil && len(parsed.Tools) == len(out.Tools) {
			for i := range parsed.Tools {
				parsed.Tools[i].Imported = out.Tools[i].Imported
			}
			return parsed
		}
	}
	return out
}
