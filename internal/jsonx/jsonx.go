// Package jsonx encodes JSON as toolgate re-encodes what it relays: as
// encoding/json does, but without escaping <, > and & for HTML. json.Marshal
// writes them as \u003c, \u003e and \u0026, also inside a json.RawMessage
// it is handed; a value re-encoded here keeps the spelling it was sent in,
// so what runs reads the bytes the client sent and the policy saw
// (docs/contract.md §3).
//
//	b, err := jsonx.Marshal(map[string]json.RawMessage{"a": json.RawMessage(`"<&>"`)})
//	// b is {"a":"<&>"}
package jsonx

import (
	"bytes"
	"encoding/json"
)

// Marshal is json.Marshal without HTML escaping: the same bytes, except
// that <, > and & are written as they are. It is safe for concurrent use.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return b[:len(b)-1], nil // Encode ends the value with a newline
}
