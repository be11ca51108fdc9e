package mcpadapter_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/toolgate/toolgate/registry"
)

// This file is the fuzzers' reference reading of the contract: what answer
// docs/contract.md §3, §5 and the SDK's own protocol rules allow for given params. It
// is written apart from the code it checks (no engine or adapter helper,
// its own limits as literals), so that a bug there is not copied here.

// refArgs is the reference reading of tools/call arguments as sent.
type refArgs struct {
	// object: the arguments are a JSON object (else the input holds {}).
	object bool
	// exact: every conforming JSON reader reads the object as the same
	// value, and OPA can hold it: valid UTF-8, no lone surrogate escape, no
	// key twice in any object, every number's binary exponent within
	// ±100000. Not exact: the call is refused at step 3.
	exact bool
	// members are the top-level members (raw values), when object and exact.
	members map[string]json.RawMessage
	// value is the object decoded with numbers as json.Number, when exact.
	value any
}

// readArgs reads the "arguments" member of params as docs/contract.md §3 says.
func readArgs(params []byte) refArgs {
	var p map[string]json.RawMessage
	if json.Unmarshal(params, &p) != nil {
		return refArgs{}
	}
	return readArgsValue(p["arguments"])
}

func readArgsValue(raw []byte) refArgs {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' || !json.Valid(raw) {
		return refArgs{}
	}
	r := refArgs{object: true}
	if !utf8.Valid(raw) || loneSurrogate(raw) {
		return r
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, ok := strictValue(dec)
	if !ok {
		return r
	}
	r.exact, r.value = true, v
	_ = json.Unmarshal(raw, &r.members) // no key twice: the last is the only one
	return r
}

// strictValue decodes one value from dec, refusing a key sent twice and a
// number OPA cannot hold.
func strictValue(dec *json.Decoder) (any, bool) {
	tok, err := dec.Token()
	if err != nil {
		return nil, false
	}
	switch t := tok.(type) {
	case json.Delim:
		if t == '[' {
			out := []any{}
			for dec.More() {
				v, ok := strictValue(dec)
				if !ok {
					return nil, false
				}
				out = append(out, v)
			}
			_, _ = dec.Token()
			return out, true
		}
		out := map[string]any{}
		for dec.More() {
			kt, _ := dec.Token()
			k := kt.(string)
			if _, dup := out[k]; dup {
				return nil, false
			}
			v, ok := strictValue(dec)
			if !ok {
				return nil, false
			}
			out[k] = v
		}
		_, _ = dec.Token()
		return out, true
	case json.Number:
		return t, numberInRange(string(t))
	default:
		return t, true
	}
}

// numberInRange: OPA holds a number whose binary exponent is within
// ±100000 (and that is finite).
func numberInRange(s string) bool {
	f, ok := new(big.Float).SetString(s)
	if !ok || f.IsInf() {
		return false
	}
	exp := f.MantExp(nil)
	return exp <= 100000 && exp >= -100000
}

// refBoundedMeta is docs/contract.md §3's bounded _meta of raw: nothing
// unless it is a JSON object of valid UTF-8; each key at its first
// occurrence (a later one is ignored, also when the first was dropped);
// an entry dropped when its value nests deeper than 4 levels, is longer
// than 4096 bytes compact, or holds a number out of range; the first 32
// entries left.
func refBoundedMeta(raw []byte) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	if !utf8.Valid(raw) || !json.Valid(raw) {
		return out
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if t, _ := dec.Token(); t != json.Delim('{') {
		return out
	}
	seen := map[string]bool{}
	for dec.More() && len(out) < 32 {
		t, _ := dec.Token()
		k, _ := t.(string)
		var v json.RawMessage
		_ = dec.Decode(&v)
		if seen[k] {
			continue
		}
		seen[k] = true
		var compact bytes.Buffer
		_ = json.Compact(&compact, v)
		if compact.Len() <= 4096 && refDepthInRange(v, 1) {
			out[k] = compact.Bytes()
		}
	}
	return out
}

// refDepthInRange: raw, at level, nests no deeper than level 4 and holds
// only numbers in range.
func refDepthInRange(raw json.RawMessage, level int) bool {
	if level > 4 {
		return false
	}
	var obj map[string]json.RawMessage
	if isKind(raw, '{') && json.Unmarshal(raw, &obj) == nil {
		for _, v := range obj {
			if !refDepthInRange(v, level+1) {
				return false
			}
		}
		return true
	}
	var arr []json.RawMessage
	if isKind(raw, '[') && json.Unmarshal(raw, &arr) == nil {
		for _, v := range arr {
			if !refDepthInRange(v, level+1) {
				return false
			}
		}
		return true
	}
	if raw = bytes.TrimSpace(raw); isNumber(raw) {
		return numberInRange(string(raw))
	}
	return true
}

// loneSurrogate reports whether a string in raw (valid JSON) has a \u escape
// of a UTF-16 surrogate that is not half of a high-low pair.
func loneSurrogate(raw []byte) bool {
	var units []uint16 // the escapes of the current run
	flush := func() bool {
		for i := 0; i < len(units); i++ {
			u := units[i]
			switch {
			case u >= 0xd800 && u < 0xdc00:
				if i+1 >= len(units) || units[i+1] < 0xdc00 || units[i+1] > 0xdfff {
					return true
				}
				i++
			case u >= 0xdc00 && u <= 0xdfff:
				return true
			}
		}
		units = units[:0]
		return false
	}
	in := false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if !in {
			in = c == '"'
			continue
		}
		switch c {
		case '"':
			if flush() {
				return true
			}
			in = false
		case '\\':
			if raw[i+1] == 'u' {
				n, _ := strconv.ParseUint(string(raw[i+2:i+6]), 16, 16)
				units = append(units, uint16(n))
				i += 5
				continue
			}
			if flush() {
				return true
			}
			i++
		default:
			if flush() {
				return true
			}
		}
	}
	return flush()
}

// Protocol faults the go-sdk answers itself, before any middleware, for a
// request whose _meta selects the 2026-07-28 revision
// (io.modelcontextprotocol/protocolVersion, a string at or after
// "2026-07-28") but does not make a valid request of it. Each depends on
// _meta alone, never on the tool name, so hidden ≡ absent holds for them.
var (
	faultClientInfo   = `{"code":-32602,"message":"invalid _meta field \"io.modelcontextprotocol/clientInfo\""}`
	faultCapabilities = `{"code":-32602,"message":"missing or invalid _meta field \"io.modelcontextprotocol/clientCapabilities\""}`
)

func faultVersion(requested string) string {
	b, _ := json.Marshal(map[string]any{
		"code": -32022, "message": "unsupported protocol version",
		"data": map[string]any{
			"supported": []string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"},
			"requested": requested,
		},
	})
	return string(b)
}

// faults is what the SDK may answer for a request: the JSON-RPC error
// objects allowed, and whether a tool result (no fault) is allowed.
type faults struct {
	allowed []string
	noFault bool
}

func (f faults) allows(errObj string) bool {
	for _, a := range f.allowed {
		if jsonEqual(a, errObj) {
			return true
		}
	}
	return false
}

// expectFaults reads the reserved _meta keys as the SDK does, for params
// sent under proto. The SDK checks, in order: clientInfo, when present,
// must decode as an Implementation; clientCapabilities must be present and
// decode as capabilities; the version must be one it serves. A check is
// certain to fail (a value of the wrong JSON kind, null, absent
// capabilities, an unserved version), certain to pass, or, for an object
// whose fields the SDK decodes with its own types, may fail.
func expectFaults(proto string, params []byte) faults {
	var p map[string]json.RawMessage
	_ = json.Unmarshal(params, &p)
	// The reserved entries the SDK reads are those of the bounded _meta
	// the policy sees (the wire layer's protocolEntries): a key sent
	// twice is its first occurrence, an entry the bounds drop is absent.
	rawMeta := []byte(p["_meta"])
	if proto == proto20260728 {
		// The raw client sends _meta decoded, with these two set, and
		// encoded again (rawClient.prepare).
		m := map[string]json.RawMessage{}
		_ = json.Unmarshal(rawMeta, &m)
		m["io.modelcontextprotocol/protocolVersion"] = json.RawMessage(`"2026-07-28"`)
		m["io.modelcontextprotocol/clientCapabilities"] = json.RawMessage(`{}`)
		rawMeta, _ = json.Marshal(m)
	}
	meta := refBoundedMeta(rawMeta)
	var version string
	if json.Unmarshal(meta["io.modelcontextprotocol/protocolVersion"], &version) != nil || version < "2026-07-28" {
		return faults{noFault: true}
	}
	type check struct {
		fault     string
		certain   bool // certain to fail
		uncertain bool // may fail
	}
	var checks []check
	if raw, ok := meta["io.modelcontextprotocol/clientInfo"]; ok {
		c := check{fault: faultClientInfo}
		var obj map[string]json.RawMessage
		switch {
		case json.Unmarshal(raw, &obj) != nil || obj == nil:
			c.certain = true
		default:
			for _, k := range []string{"name", "title", "version", "websiteUrl"} {
				if v, ok := obj[k]; ok && !isKind(v, '"') && !isKind(v, 'n') {
					c.certain = true
				}
			}
			if v, ok := obj["icons"]; ok && !isKind(v, 'n') {
				c.uncertain = true
			}
		}
		checks = append(checks, c)
	}
	{
		c := check{fault: faultCapabilities}
		var obj map[string]json.RawMessage
		switch raw, ok := meta["io.modelcontextprotocol/clientCapabilities"]; {
		case !ok || json.Unmarshal(raw, &obj) != nil || obj == nil:
			c.certain = true
		case len(obj) > 0:
			c.uncertain = true
		}
		checks = append(checks, c)
	}
	checks = append(checks, check{fault: faultVersion(version), certain: version != "2026-07-28"})
	var f faults
	for _, c := range checks {
		if c.certain || c.uncertain {
			f.allowed = append(f.allowed, c.fault)
		}
		if c.certain {
			return f
		}
	}
	if raw, ok := p["inputResponses"]; ok && !isKind(raw, '{') {
		// The wire layer refuses it on this revision.
		f.allowed = append(f.allowed, faultInputResponses)
		return f
	}
	f.noFault = true
	return f
}

// faultInputResponses answers a 2026-07-28 tools/call whose
// inputResponses is not an object (the wire layer's, not the SDK's).
const faultInputResponses = `{"code":-32602,"message":"invalid params: inputResponses must be an object"}`

// isKind reports whether raw is a JSON value starting with c ('"' string,
// 'n' null, '{' object, '[' array).
func isKind(raw json.RawMessage, c byte) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == c
}

func jsonEqual(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return bytes.Equal(xb, yb)
}

// argAnswer is the argument answer of docs/contract.md §5 that binding args to row
// gives ("" when binding succeeds): the first declared argument, in order,
// that is missing (required, no default) or holds a value its declared
// type (and the row's keywords, and the demo method's Go type) cannot take.
func argAnswer(row *registry.Tool, args refArgs) string {
	for _, a := range row.Arguments {
		v, sent := args.members[a.Name]
		if !sent {
			if a.Required {
				return fmt.Sprintf("Error: Missing required argument '%s'.", a.Name)
			}
			continue
		}
		if !valueFits(&a, v) {
			if !registry.IsPrimitive(a.Type) {
				return fmt.Sprintf("Error: Invalid value for argument '%s'.", a.Name)
			}
			return fmt.Sprintf("Error: Invalid value for argument '%s': expected %s.", a.Name, a.Type)
		}
	}
	return ""
}

var (
	moneyAmount   = regexp.MustCompile(`^-?[0-9]+(\.[0-9]{1,2})?$`)
	moneyCurrency = regexp.MustCompile(`^[A-Z]{3}$`)
	intLiteral    = regexp.MustCompile(`^-?[0-9]+$`)
)

// valueFits says whether v is a value argument a can take: JSON type,
// minimum/maximum, and the Go type the demo methods decode into (int64 for
// int, float64 for float).
func valueFits(a *registry.Argument, v json.RawMessage) bool {
	v = bytes.TrimSpace(v)
	switch a.Type {
	case registry.TypeInt:
		if !intLiteral.Match(v) {
			return false // 1.0 and 1e3 pass the schema but not Go's int64
		}
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			return false
		}
		return within(n, a.Minimum, a.Maximum)
	case registry.TypeFloat:
		if !isNumber(v) {
			return false
		}
		f, err := strconv.ParseFloat(string(v), 64)
		return err == nil && !math.IsInf(f, 0)
	case registry.TypeString:
		return isKind(v, '"')
	case registry.TypeBool:
		return string(v) == "true" || string(v) == "false"
	case registry.TypeArray:
		return isKind(v, '[')
	case registry.TypeObject:
		return isKind(v, '{')
	case "Money":
		var m map[string]json.RawMessage
		if json.Unmarshal(v, &m) != nil || m == nil || len(m) != 2 {
			return false
		}
		var amount, currency string
		if json.Unmarshal(m["amount"], &amount) != nil || !isKind(m["amount"], '"') ||
			json.Unmarshal(m["currency"], &currency) != nil || !isKind(m["currency"], '"') {
			return false
		}
		return moneyAmount.MatchString(amount) && moneyCurrency.MatchString(currency)
	}
	panic("the fuzz registry declares a type the reference does not know: " + a.Type)
}

func within(n int64, lo, hi *json.Number) bool {
	x := new(big.Float).SetInt64(n)
	if lo != nil {
		l, _ := new(big.Float).SetString(string(*lo))
		if x.Cmp(l) < 0 {
			return false
		}
	}
	if hi != nil {
		h, _ := new(big.Float).SetString(string(*hi))
		if x.Cmp(h) > 0 {
			return false
		}
	}
	return true
}

func isNumber(v []byte) bool {
	return len(v) > 0 && (v[0] == '-' || v[0] >= '0' && v[0] <= '9')
}

// methodResult is the text the demo method of row returns for args, and
// whether it returns one (false: it fails, or its text is not fixed).
func methodResult(row *registry.Tool, args refArgs) (text string, fixed bool) {
	str := func(name string) string {
		var s string
		_ = json.Unmarshal(args.members[name], &s)
		return s
	}
	num := func(name string) int64 {
		n, _ := strconv.ParseInt(string(bytes.TrimSpace(args.members[name])), 10, 64)
		return n
	}
	switch row.Method {
	case "demo.echo", "demo.execUrl":
		return str(map[string]string{"demo.echo": "text", "demo.execUrl": "url"}[row.Method]), true
	case "demo.add":
		return strconv.FormatInt(num("a")+num("b"), 10), true
	case "demo.sleep":
		return strconv.FormatInt(num("ms"), 10), true
	case "demo.price":
		var m struct{ Amount, Currency string }
		_ = json.Unmarshal(args.members["price"], &m)
		whole, frac, _ := strings.Cut(m.Amount, ".")
		return fmt.Sprintf("%s.%s %s", whole, (frac + "00")[:2], m.Currency), true
	case "demo.getReward":
		id := int(num("idReward"))
		note := ""
		if _, ok := args.members["note"]; ok {
			note = str("note")
		}
		b, _ := json.Marshal(struct {
			ID     int    `json:"idReward"`
			Name   string `json:"name"`
			Points int    `json:"points"`
			Note   string `json:"note,omitempty"`
		}{id, fmt.Sprintf("Reward %d", id), 10 * id, note})
		return string(b), true
	case "demo.count":
		return "", false // a counter: checked to be a positive integer
	}
	return "", false // demo.fail and demo.inner never return a result
}
