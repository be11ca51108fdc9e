package audit

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"sync"
)

// appendRecord appends r as json.Marshal encodes it, byte for byte: the
// fields in the struct's order, omitempty as tagged, strings and meta
// escaped as encoding/json escapes them (HTML-safe: <, >, & and U+2028,
// U+2029 as \u escapes; invalid UTF-8 as U+FFFD), the duration as its
// float encoder writes it. It fails where json.Marshal fails (a NaN or
// infinite duration, a meta that is not JSON). Values that need escaping
// are rare in a record (a failure's detail); they are encoded by
// encoding/json itself, so the rules cannot drift from it.
// FuzzAppendRecord checks it against json.Marshal.
func appendRecord(b []byte, r *Record) ([]byte, error) {
	var err error
	b = append(b, `{"decision_id":`...)
	b = appendString(b, r.DecisionID)
	b = append(b, `,"timestamp":`...)
	b = appendString(b, r.Timestamp)
	b = append(b, `,"subject":`...)
	b = appendString(b, r.Subject)
	b = append(b, `,"tool":`...)
	b = appendString(b, r.Tool)
	b = append(b, `,"method":`...)
	b = appendString(b, r.Method)
	b = append(b, `,"outcome":`...)
	b = appendString(b, r.Outcome)
	b = append(b, `,"reason":`...)
	b = appendString(b, r.Reason)
	b = append(b, `,"error":`...)
	b = appendString(b, r.Error)
	b = append(b, `,"duration_ms":`...)
	if b, err = appendFloat(b, r.DurationMS); err != nil {
		return nil, err
	}
	b = append(b, `,"revision":`...)
	b = appendString(b, r.Revision)
	b = append(b, `,"meta":`...)
	if b, err = appendRaw(b, r.Meta); err != nil {
		return nil, err
	}
	b = append(b, `,"arguments_sha256":`...)
	b = appendString(b, r.ArgumentsSHA256)
	if r.ApprovalID != "" {
		b = append(b, `,"approval_id":`...)
		b = appendString(b, r.ApprovalID)
	}
	if r.ApprovedBy != "" {
		b = append(b, `,"approved_by":`...)
		b = appendString(b, r.ApprovedBy)
	}
	b = append(b, `,"stage":`...)
	b = appendString(b, r.Stage)
	b = append(b, `,"grant":`...)
	b = appendString(b, r.Grant)
	if len(r.Rules) > 0 {
		b = append(b, `,"rules":`...)
		b = appendStrings(b, r.Rules)
	}
	if len(r.Denials) > 0 {
		b = append(b, `,"denials":[`...)
		for i := range r.Denials {
			d := &r.Denials[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"reason":`...)
			b = appendString(b, d.Reason)
			if d.Hook != "" {
				b = append(b, `,"hook":`...)
				b = appendString(b, d.Hook)
			}
			if len(d.Rules) > 0 {
				b = append(b, `,"rules":`...)
				b = appendStrings(b, d.Rules)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if r.TraceID != "" {
		b = append(b, `,"trace_id":`...)
		b = appendString(b, r.TraceID)
	}
	return append(b, '}'), nil
}

// plain reports whether encoding/json writes c, a byte of a string, as
// itself: printable ASCII but for the quote, the backslash and the three
// characters it escapes for HTML.
func plain(c byte) bool {
	return c >= 0x20 && c < 0x7f && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
}

// appendString appends s quoted as json.Marshal quotes it.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if !plain(s[i]) {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

func appendStrings(b []byte, ss []string) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, s)
	}
	return append(b, ']')
}

// appendFloat appends f as encoding/json's float64 encoder writes it:
// strconv's shortest 'f' form, but for magnitudes it writes in exponent
// form (left to it).
func appendFloat(b []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		_, err := json.Marshal(f) // *json.UnsupportedValueError
		return nil, err
	}
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		e, err := json.Marshal(f)
		return append(b, e...), err
	}
	return strconv.AppendFloat(b, f, 'f', -1, 64), nil
}

// appendRaw appends raw as json.Marshal writes a json.RawMessage: null when
// nil, else compacted with the HTML-safe escapes, and an error when it is
// not JSON. A compact raw value without those characters (what
// toolcall.Meta.MarshalJSON writes) is appended as it is.
func appendRaw(b []byte, raw json.RawMessage) ([]byte, error) {
	if raw == nil {
		return append(b, "null"...), nil
	}
	if !json.Valid(raw) { // empty too
		_, err := json.Marshal(raw) // *json.MarshalerError
		return nil, err
	}
	asIs := true
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\n', '\r', '<', '>', '&', 0xE2: // 0xE2 leads U+2028 and U+2029
			asIs = false
		}
	}
	if asIs {
		return append(b, raw...), nil
	}
	var compact, escaped bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return nil, err
	}
	json.HTMLEscape(&escaped, compact.Bytes())
	return append(b, escaped.Bytes()...), nil
}

// line is one encoded record on its way to the writer; lines are reused.
type line struct{ b []byte }

// maxPooledLine is the largest line kept for reuse: a record with a
// large meta or many denials is encoded into a buffer of its own.
const maxPooledLine = 16 << 10

var lines = sync.Pool{New: func() any { return &line{b: make([]byte, 0, 1024)} }}

func getLine() *line { return lines.Get().(*line) }

func putLine(l *line) {
	if cap(l.b) > maxPooledLine {
		return
	}
	l.b = l.b[:0]
	lines.Put(l)
}
