package regoload

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/util"

	"github.com/toolgate/toolgate/diag"
)

// Parsed is what Parse read: modules by file name, and the data documents
// mounted into one tree.
type Parsed struct {
	// Modules are the parsed policies and tests, keyed by File.Name (which
	// is also the file of their locations).
	Modules map[string]*ast.Module
	// Data is the data tree: each document merged in at the path of its
	// directory.
	Data map[string]any
	// Files names the files loaded, in the order given.
	Files []string
}

// ParserOptions is how every policy is parsed: Rego v1, with METADATA
// annotations (the type checker reads their schemas), and the syntax the
// capabilities allow.
func ParserOptions(caps *ast.Capabilities) ast.ParserOptions {
	return ast.ParserOptions{RegoVersion: ast.RegoV1, ProcessAnnotation: true, Capabilities: caps}
}

// Parse parses every policy and test file and decodes and mounts every data
// document (JSON, or YAML). It reports every file that does not parse, and
// every document that is not an object or redefines a key another one
// defines, as one *[diag.List]; nothing is returned then.
func Parse(files []File, caps *ast.Capabilities) (*Parsed, error) {
	p := &Parsed{Modules: map[string]*ast.Module{}, Data: map[string]any{}}
	var ds []diag.Diagnostic
	for _, f := range files {
		switch f.Kind {
		case Policy, Test:
			m, err := ast.ParseModuleWithOpts(f.Name, string(f.Data), ParserOptions(caps))
			if err != nil {
				var errs ast.Errors
				if errors.As(err, &errs) {
					ds = append(ds, Diagnostics(errs)...)
				} else {
					ds = append(ds, diag.Diagnostic{File: f.Name, Message: err.Error()})
				}
				continue
			}
			p.Modules[f.Name] = m
		case Data:
			var doc any
			if err := util.Unmarshal(f.Data, &doc); err != nil {
				ds = append(ds, diag.Diagnostic{File: f.Name, Message: "data: " + err.Error()})
				continue
			}
			if err := mountData(p.Data, path.Dir(f.Rel), doc); err != nil {
				ds = append(ds, diag.Diagnostic{File: f.Name, Message: err.Error()})
				continue
			}
		default:
			continue
		}
		p.Files = append(p.Files, f.Name)
	}
	if len(ds) > 0 {
		return nil, &diag.List{Diagnostics: ds}
	}
	return p, nil
}

// mountData places doc at the data path named by a directory.
func mountData(root map[string]any, dir string, doc any) error {
	node := root
	if dir != "." && dir != "" {
		for _, seg := range strings.Split(dir, "/") {
			next, ok := node[seg]
			if !ok {
				m := map[string]any{}
				node[seg] = m
				node = m
				continue
			}
			m, ok := next.(map[string]any)
			if !ok {
				return fmt.Errorf("data: %s conflicts with a value already loaded", dir)
			}
			node = m
		}
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return errors.New("data: the document must be an object")
	}
	for k, v := range obj {
		if _, dup := node[k]; dup {
			return fmt.Errorf("data: key %q is defined twice", k)
		}
		node[k] = v
	}
	return nil
}
