package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Formats Parse accepts.
const (
	FormatYAML = "yaml"
	FormatJSON = "json"
)

const (
	// maxDepth bounds nesting, so a hostile document cannot exhaust the stack.
	maxDepth = 256
	// maxNodes bounds the values a YAML document decodes to.
	maxNodes = 1 << 20
	// maxAliased bounds the values a YAML document's aliases expand to: a
	// "billion laughs" document is a few lines long. Registries reuse an
	// anchor for a row or an argument list, a few hundred values.
	maxAliased = 1 << 16
)

var (
	errTooDeep  = fmt.Errorf("nested deeper than %d levels", maxDepth)
	errTooLarge = fmt.Errorf("expands to more than %d values", maxNodes)
	errAliases  = fmt.Errorf("aliases expand to more than %d values", maxAliased)
)

// decodeJSON decodes data into plain values: map[string]any, []any, string,
// bool, nil and json.Number (exact). A duplicate key in an object is an
// error: encoding/json would silently keep the last one.
func decodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := jsonValue(dec, 0)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	if err == nil {
		if _, terr := dec.Token(); terr != io.EOF {
			err = errors.New("unexpected data after the document")
		}
	}
	if err != nil {
		return nil, &ParseError{Format: FormatJSON, Line: jsonLine(data, err, dec.InputOffset()), Err: err}
	}
	return v, nil
}

func jsonValue(dec *json.Decoder, depth int) (any, error) {
	if depth > maxDepth {
		return nil, errTooDeep
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok := tok.(type) {
	case json.Delim:
		switch tok {
		case '{':
			m := map[string]any{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, unexpectedEOF(err)
				}
				k, ok := kt.(string)
				if !ok {
					return nil, fmt.Errorf("object key %v is not a string", kt)
				}
				if _, dup := m[k]; dup {
					return nil, fmt.Errorf("duplicate key %q", k)
				}
				v, err := jsonValue(dec, depth+1)
				if err != nil {
					return nil, unexpectedEOF(err)
				}
				m[k] = v
			}
			if _, err := dec.Token(); err != nil {
				return nil, unexpectedEOF(err)
			}
			return m, nil
		case '[':
			a := []any{}
			for dec.More() {
				v, err := jsonValue(dec, depth+1)
				if err != nil {
					return nil, unexpectedEOF(err)
				}
				a = append(a, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, unexpectedEOF(err)
			}
			return a, nil
		}
		return nil, fmt.Errorf("unexpected %v", tok)
	default:
		return tok, nil // string, bool, nil, json.Number
	}
}

// unexpectedEOF turns the end of input inside a value into an error.
func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// jsonLine returns the 1-based line of a JSON error.
func jsonLine(data []byte, err error, offset int64) int {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		offset = se.Offset
	}
	offset = min(max(offset, 0), int64(len(data)))
	return 1 + bytes.Count(data[:offset], []byte("\n"))
}

// decodeYAML decodes data into the same plain values as decodeJSON. Numbers
// stay exact: an integer is kept as its decimal digits, never rounded through
// float64. Aliases are expanded and merge keys (<<) applied; a duplicate key,
// a non-scalar key, .inf and .nan are errors.
func decodeYAML(data []byte) (any, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, &ParseError{Format: FormatYAML, Err: errors.New(strings.TrimPrefix(err.Error(), "yaml: "))}
	}
	d := yamlDecoder{}
	v, err := d.value(&root, 0)
	if err != nil {
		return nil, &ParseError{Format: FormatYAML, Line: d.line, Err: err}
	}
	return v, nil
}

type yamlDecoder struct {
	nodes   int
	aliased int // values decoded inside an alias
	inAlias int
	line    int // of the node that failed
}

func (d *yamlDecoder) fail(n *yaml.Node, err error) error {
	if d.line == 0 {
		d.line = n.Line
	}
	return err
}

func (d *yamlDecoder) value(n *yaml.Node, depth int) (any, error) {
	if depth > maxDepth {
		return nil, d.fail(n, errTooDeep)
	}
	if d.nodes++; d.nodes > maxNodes {
		return nil, d.fail(n, errTooLarge)
	}
	if d.inAlias > 0 {
		if d.aliased++; d.aliased > maxAliased {
			return nil, d.fail(n, errAliases)
		}
	}
	switch n.Kind {
	case 0: // an empty document
		return nil, nil
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return d.value(n.Content[0], depth)
	case yaml.AliasNode:
		if n.Alias == nil {
			return nil, d.fail(n, errors.New("unknown alias"))
		}
		d.inAlias++
		defer func() { d.inAlias-- }()
		return d.value(n.Alias, depth+1)
	case yaml.SequenceNode:
		a := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := d.value(c, depth+1)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		return a, nil
	case yaml.MappingNode:
		return d.mapping(n, depth)
	case yaml.ScalarNode:
		return d.scalar(n)
	}
	return nil, d.fail(n, fmt.Errorf("unsupported YAML node kind %d", n.Kind))
}

func (d *yamlDecoder) mapping(n *yaml.Node, depth int) (map[string]any, error) {
	m := make(map[string]any, len(n.Content)/2)
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		for kn.Kind == yaml.AliasNode && kn.Alias != nil {
			kn = kn.Alias
		}
		if kn.Kind != yaml.ScalarNode {
			return nil, d.fail(kn, errors.New("a mapping key must be a scalar"))
		}
		if kn.ShortTag() == "!!merge" {
			merges = append(merges, vn)
			continue
		}
		if kn.ShortTag() == "!!null" {
			return nil, d.fail(kn, errors.New("a mapping key must not be null"))
		}
		k := kn.Value
		if _, dup := m[k]; dup {
			return nil, d.fail(kn, fmt.Errorf("duplicate key %q", k))
		}
		v, err := d.value(vn, depth+1)
		if err != nil {
			return nil, err
		}
		m[k] = v
	}
	// Merged keys never override the mapping's own, and earlier merges win
	// over later ones, as YAML's merge key type says.
	for _, mn := range merges {
		v, err := d.value(mn, depth+1)
		if err != nil {
			return nil, err
		}
		var srcs []any
		switch v := v.(type) {
		case map[string]any:
			srcs = []any{v}
		case []any:
			srcs = v
		default:
			return nil, d.fail(mn, errors.New("a merge key (<<) takes a mapping or a list of mappings"))
		}
		for _, src := range srcs {
			sm, ok := src.(map[string]any)
			if !ok {
				return nil, d.fail(mn, errors.New("a merge key (<<) takes a mapping or a list of mappings"))
			}
			for k, sv := range sm {
				if _, set := m[k]; !set {
					m[k] = sv
				}
			}
		}
	}
	return m, nil
}

// jsonNumber matches the JSON number grammar.
var jsonNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)

func (d *yamlDecoder) scalar(n *yaml.Node) (any, error) {
	switch n.ShortTag() {
	case "!!null":
		return nil, nil
	case "!!str", "!!binary", "!!timestamp":
		// A timestamp stays the text written: JSON has no time type.
		return n.Value, nil
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return nil, d.fail(n, err)
		}
		return b, nil
	case "!!int":
		// yaml.v3 reads 0x1F, 0o17, 017, 1_000; big.Int's base 0 reads the same.
		var i big.Int
		if _, ok := i.SetString(strings.ReplaceAll(n.Value, "_", ""), 0); !ok {
			return nil, d.fail(n, fmt.Errorf("integer %q cannot be read", n.Value))
		}
		return json.Number(i.String()), nil
	case "!!float":
		if jsonNumber.MatchString(n.Value) {
			// Keep the digits as written: 9007199254740993 and
			// 123456789012345678901234567890 are not rounded.
			return json.Number(n.Value), nil
		}
		f, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64)
		if err != nil {
			// YAML spellings strconv does not read: .inf, .NaN, +.5.
			if n.Decode(&f) != nil {
				return nil, d.fail(n, fmt.Errorf("number %q cannot be read", n.Value))
			}
		}
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, d.fail(n, fmt.Errorf("%s is not a JSON number", n.Value))
		}
		return json.Number(strconv.FormatFloat(f, 'g', -1, 64)), nil
	}
	return nil, d.fail(n, fmt.Errorf("unsupported YAML tag %s", n.ShortTag()))
}
