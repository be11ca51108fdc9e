// Package conformance reads the conformance fixtures of
// mcpadapter/testdata/conformance: one scenario a file, a first line saying
// what it pins down, then sections "-- NAME --". Tests of the adapter (over
// in-memory transports) and of the binary (over `toolgate serve --stdio`)
// run the same fixtures.
package conformance

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Caller is a fixture's caller; nil is nobody.
type Caller struct {
	Subject string         `json:"subject"`
	Roles   []string       `json:"roles"`
	Claims  map[string]any `json:"claims,omitempty"`
}

// Fixture is one scenario.
type Fixture struct {
	Name    string
	Path    string
	Comment string
	Caller  *Caller
	// Hooks are test hooks by name (see the adapter's harness).
	Hooks []string
	// Registry replaces the bundled registry when not empty.
	Registry string
	// Policies are policy files added to (or replacing) the bundled ones.
	Policies map[string]string
	// Params are the tools/call params as sent.
	Params string
	// After are the outcomes the after hooks see, in order.
	After []string
	// Response is the golden JSON-RPC response (indented) under 2025-06-18.
	Response string

	order    []string
	sections map[string]string
}

var sectionRE = regexp.MustCompile(`(?m)^-- (.+) --\n`)

// Dir is the fixtures' directory relative to the module root.
const Dir = "mcpadapter/testdata/conformance"

// Load reads every *.txt fixture in dir.
func Load(dir string) ([]*Fixture, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("conformance: no fixtures in %s", dir)
	}
	var out []*Fixture
	for _, p := range paths {
		f, err := Parse(p)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// Parse reads one fixture file.
func Parse(path string) (*Fixture, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	text := string(data)
	f := &Fixture{Name: strings.TrimSuffix(filepath.Base(path), ".txt"), Path: path, sections: map[string]string{}, Policies: map[string]string{}}
	locs := sectionRE.FindAllStringSubmatchIndex(text, -1)
	if len(locs) == 0 {
		return nil, fmt.Errorf("%s: no sections", path)
	}
	f.Comment = strings.TrimSpace(text[:locs[0][0]])
	if f.Comment == "" {
		return nil, fmt.Errorf("%s: the first line must say what the fixture pins down", path)
	}
	for i, l := range locs {
		name := text[l[2]:l[3]]
		end := len(text)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		f.sections[name] = text[l[1]:end]
		f.order = append(f.order, name)
	}
	var s struct {
		Caller *Caller  `json:"caller"`
		Hooks  []string `json:"hooks"`
	}
	if err := json.Unmarshal([]byte(f.sections["setup"]), &s); err != nil {
		return nil, fmt.Errorf("%s: setup: %w", path, err)
	}
	f.Caller, f.Hooks, f.Registry = s.Caller, s.Hooks, f.sections["registry"]
	for name, body := range f.sections {
		if pn, ok := strings.CutPrefix(name, "policy "); ok {
			f.Policies[pn] = body
		}
	}
	f.Params = strings.TrimSpace(f.sections["params"])
	if err := json.Unmarshal([]byte(f.sections["after"]), &f.After); err != nil {
		return nil, fmt.Errorf("%s: after: %w", path, err)
	}
	f.Response = strings.TrimSpace(f.sections["response"])
	return f, nil
}

// WriteResponse rewrites the fixture file with a new golden response.
func (f *Fixture) WriteResponse(response string) error {
	var b strings.Builder
	b.WriteString(f.Comment + "\n")
	for _, name := range f.order {
		body := f.sections[name]
		if name == "response" {
			body = response + "\n"
		}
		b.WriteString("-- " + name + " --\n" + body)
	}
	return os.WriteFile(f.Path, []byte(b.String()), 0o644)
}
