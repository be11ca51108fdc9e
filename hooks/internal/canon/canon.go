// Package canon is internal/canon under the hooks' import path: the hooks
// and the decision log hash arguments with the one implementation there.
package canon

import "github.com/toolgate/toolgate/internal/canon"

// JSON is canon.JSON: the canonical form of a JSON value.
func JSON(raw []byte) []byte { return canon.JSON(raw) }

// SHA256 is canon.SHA256: the hex SHA-256 of JSON(raw).
func SHA256(raw []byte) string { return canon.SHA256(raw) }
