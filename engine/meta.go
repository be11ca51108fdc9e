package engine

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/toolgate/toolgate/internal/exactjson"
	"github.com/toolgate/toolgate/internal/metabound"
	"github.com/toolgate/toolgate/toolcall"
)

// Bounds on a client's _meta (docs/contract.md §3, "Bounding _meta").
const (
	// MaxMetaEntries is the number of entries kept: the first ones, in wire
	// order, that pass the other bounds.
	MaxMetaEntries = metabound.MaxEntries
	// MaxMetaDepth is the deepest level a value may reach. An entry's own value
	// is level 1; every value inside an object or array is one level deeper.
	MaxMetaDepth = metabound.MaxDepth
	// MaxMetaValueLen is the longest an entry's value may be, counted in bytes
	// of its compact JSON encoding as sent (insignificant whitespace removed,
	// escapes as the client wrote them: "\u00e9" counts 6, "é" counts 2).
	MaxMetaValueLen = metabound.MaxValueLen
)

// Meta is a bounded _meta object: at most MaxMetaEntries entries in wire
// order, each value the exact JSON the client sent, compacted.
type Meta = toolcall.Meta

// MetaEntry is one kept entry of a Meta.
type MetaEntry = toolcall.MetaEntry

// BoundMeta applies docs/contract.md §3 to a raw _meta. It never fails:
//
//   - anything that is not a JSON object becomes empty: null, arrays, scalars,
//     empty input, invalid JSON anywhere (also trailing data after the object,
//     and nesting deeper than encoding/json reads, 10000), and input that is
//     not valid UTF-8 (RFC 8259 §8.1);
//   - an entry whose value nests deeper than MaxMetaDepth is dropped;
//   - an entry whose compact value is longer than MaxMetaValueLen bytes is dropped;
//   - an entry holding a number that OPA cannot represent (a binary exponent
//     beyond ±100000, such as 1e99999; ast.NumberChecked) is dropped, since it
//     cannot be kept exactly as sent;
//   - a key that occurs again is ignored: its first occurrence decides, whether
//     or not that one was kept;
//   - the first MaxMetaEntries entries that pass are kept, in wire order.
//
// The work is linear in len(raw) and allocates only what is kept; raw is not
// retained.
func BoundMeta(raw json.RawMessage) Meta {
	entries := metabound.Bound(raw, func(k string, v json.RawMessage) MetaEntry { return MetaEntry{Key: k, Value: v} })
	if entries == nil {
		return Meta{}
	}
	return toolcall.MetaOf(entries)
}

// metaAST returns m as an OPA object for the input document. Numbers keep
// their exact text (ast.Number is a string); nothing goes through float64.
// Within a value, a key sent twice takes its last value and a lone surrogate
// escape reads as U+FFFD, as encoding/json (and so Map, String and every Go
// hook) and OPA's own input decoding do: the policy reads what the hooks
// read. Each call builds a new value.
//
// It fails, rather than leave an entry out, when a value cannot be converted;
// BoundMeta keeps only values OPA can represent, so that is not expected.
func metaAST(m Meta) (ast.Value, error) {
	entries := m.Entries()
	obj := ast.NewObjectWithCapacity(len(entries))
	for _, e := range entries {
		v, err := metaValue(e.Value)
		if err != nil {
			return nil, fmt.Errorf("entry %q: %w", e.Key, err)
		}
		obj.Insert(ast.StringTerm(e.Key), ast.NewTerm(v))
	}
	return obj, nil
}

// metaValue converts one kept value. exactjson reads the bytes in one pass
// and gives what OPA's decoder gives wherever it accepts them; it refuses
// a key sent twice and a lone surrogate, which OPA's reading (the last
// value, U+FFFD) decides instead.
func metaValue(raw json.RawMessage) (ast.Value, error) {
	if v, err := exactjson.Value(raw); err == nil {
		return v, nil
	}
	return ast.ValueFromReader(bytes.NewReader(raw))
}
