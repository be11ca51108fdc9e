package engine

import (
	"bytes"
	"encoding/json"
	"math/big"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// FuzzBoundMeta checks that BoundMeta never panics, always stays within the
// bounds, is idempotent, agrees with OPA's view of its own JSON, and keeps
// what a slow reference reading of the rules keeps. Seeds live in
// testdata/fuzz/FuzzBoundMeta.
func FuzzBoundMeta(f *testing.F) {
	for _, s := range []string{
		`{}`, `null`, `{"a":1,"a":2}`, `{"a":{"b":{"c":{"d":1}}}}`, `{"a":[[[[1]]]]}`,
		`{"n":12345678901234567890.123456789,"e":1e40000}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		m := BoundMeta(raw)
		checkInvariants(t, m)
		// What BoundMeta keeps, the input document can hold: a decision
		// never fails on a bounded _meta.
		_, err := metaAST(m)
		require.NoError(t, err)

		want, isObject := referenceBound(raw)
		if !isObject {
			require.Zero(t, m.Len(), "not an object, yet entries were kept")
			return
		}
		require.Equal(t, want, m.Entries())
	})
}

// The bounds of docs/contract.md §3, written here again rather than read from the code
// the reference checks: a wrong constant there must not pass unnoticed.
const (
	refMaxEntries  = 32
	refMaxDepth    = 4
	refMaxValueLen = 4096
)

// referenceBound is a slow, independent reading of docs/contract.md §3: the top-level
// entries in wire order from the decoder's tokens, each value re-read as a
// whole, compacted with json.Compact and measured.
func referenceBound(raw []byte) ([]MetaEntry, bool) {
	if !utf8.Valid(raw) || !json.Valid(raw) {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, _ := dec.Token(); tok != json.Delim('{') {
		return nil, false
	}
	var kept []MetaEntry
	seenKeys := map[string]bool{}
	for dec.More() {
		tok, _ := dec.Token()
		key := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			panic(err) // raw is valid JSON
		}
		if seenKeys[key] || len(kept) == refMaxEntries {
			continue
		}
		seenKeys[key] = true
		var c bytes.Buffer
		if err := json.Compact(&c, v); err != nil {
			panic(err)
		}
		if c.Len() > refMaxValueLen || refDepth(c.Bytes()) > refMaxDepth || !opaNumbers(c.Bytes()) {
			continue
		}
		kept = append(kept, MetaEntry{Key: key, Value: c.Bytes()})
	}
	return kept, true
}

// refDepth counts levels by recursion over decoded tokens.
func refDepth(v []byte) int {
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	var level func() int
	level = func() int { // reads one value; returns its depth
		tok, _ := dec.Token()
		if tok != json.Delim('{') && tok != json.Delim('[') {
			return 1
		}
		deepest := 1
		for dec.More() {
			if tok == json.Delim('{') {
				dec.Token() // the key
			}
			deepest = max(deepest, 1+level())
		}
		dec.Token() // the closing delimiter
		return deepest
	}
	return level()
}

// opaNumbers reports whether every number in v is one OPA accepts: finite,
// with a binary exponent within ±100000 (OPA's limit, ast.NumberChecked).
func opaNumbers(v []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return true
		}
		if n, ok := tok.(json.Number); ok {
			f, ok := new(big.Float).SetString(string(n))
			if !ok || f.IsInf() {
				return false
			}
			if exp := f.MantExp(nil); exp > 100000 || exp < -100000 {
				return false
			}
		}
	}
}
