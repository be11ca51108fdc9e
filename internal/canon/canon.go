// Package canon hashes a call's arguments the same way everywhere, so the
// ledger's argument check, the audit trail's arguments_sha256 and the
// decision log's argument hashes agree.
package canon

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// JSON returns the canonical form of a JSON value: decoded with numbers kept
// as their text (json.Number), re-encoded compactly with object keys sorted
// and without HTML escaping. Two values equal up to key order and
// insignificant whitespace have the same canonical form; numbers are compared
// by their text (1 and 1.0 differ). Input that is not valid JSON is returned
// as is.
func JSON(raw []byte) []byte {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return raw
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return raw
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// SHA256 is the hex SHA-256 of JSON(raw).
func SHA256(raw []byte) string {
	sum := sha256.Sum256(JSON(raw))
	return hex.EncodeToString(sum[:])
}
