package mcpadapter

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"regexp"
	"strings"

	"github.com/toolgate/toolgate/internal/exactjson"
)

// What the result rules see and rewrite (docs/limits.md "Result rules"):
// every string a client can read of what an upstream or method sends it —
// a result, and what is relayed during a call — as its JSON on the wire,
// walked here as a tree of decoded JSON (numbers as json.Number, so none
// loses a digit).
//
// Two kinds of objects are told apart. A protocol object (the result, a
// content item, an embedded resource, annotations, a notification's
// params) has the members MCP names: its keys are the protocol's, never
// redacted, and the `type` of a content item names its kind. A free
// object (`_meta`, `structuredContent`, a log message's data, a sampling
// request's metadata, a tool_use input, the properties of an elicitation's
// schema) holds whatever the sender chose: its keys are text a client
// reads, redacted like values.
//
// Binary payloads (`data` of an image or audio item, `blob` of an embedded
// resource) of a text or JSON MIME type are decoded for the rules and
// redacted as text (then encoded again); others are never decoded: the
// rules see their type, MIME type and size.

// freeMembers are the members whose value is a free object in any
// protocol object.
var freeMembers = map[string]bool{"_meta": true, "structuredContent": true, "metadata": true, "input": true, "properties": true, "arguments": true}

// errRedactedKeys: two keys of one object became one after redaction.
var errRedactedKeys = errors.New("two keys of one object are the same once redacted")

// wireTree decodes v's JSON encoding as a tree (json.Number numbers). A
// JSON text a tree cannot hold exactly (a key twice, a lone surrogate
// escape) is an error: the rules would see another value than the
// client gets.
func wireTree(v any) (any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if err := exactjson.Check(raw); err != nil {
		return nil, err
	}
	return decodeTree(raw)
}

// sentTree is wireTree(v), or the tree of sent (v's JSON as its upstream
// sent it, KeepSent) when not nil.
func sentTree(v any, sent json.RawMessage) (any, error) {
	if sent == nil {
		return wireTree(v)
	}
	if err := exactjson.Check(sent); err != nil {
		return nil, err
	}
	return decodeTree(sent)
}

func decodeTree(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var t any
	if err := dec.Decode(&t); err != nil {
		return nil, err
	}
	return t, nil
}

// textMIME reports whether a payload of MIME type mt is text for the
// rules: text/*, application/json, and any +json type.
func textMIME(mt string) bool {
	base, _, err := mime.ParseMediaType(mt)
	if err != nil {
		base = strings.ToLower(strings.TrimSpace(mt))
	}
	return strings.HasPrefix(base, "text/") || base == "application/json" || strings.HasSuffix(base, "+json")
}

// binaryMember is the name of o's binary payload ("data" of an image or
// audio item, "blob" of resource contents), "" when it has none.
func binaryMember(o map[string]any) string {
	if _, ok := o["blob"].(string); ok {
		return "blob"
	}
	if _, ok := o["data"].(string); ok {
		if t, _ := o["type"].(string); t == "image" || t == "audio" {
			return "data"
		}
	}
	return ""
}

// viewSize counts the bytes of the strings (keys and values) of a view.
type viewSize struct{ n, max int }

func (s *viewSize) add(n int) error {
	s.n += n
	if s.n > s.max {
		return errResultTooLarge
	}
	return nil
}

// ruleView is the rules' view of a wire tree: the tree itself, with each
// binary payload of a text or JSON MIME type decoded (the member holds the
// text), each other one left out, and beside either its size in bytes
// ("size"); an embedded resource item also carries its resource's
// mimeType. It fails with errResultTooLarge past max bytes of strings.
func ruleView(t any, max int) (any, error) {
	s := &viewSize{max: max}
	v, err := viewOf(t, false, s)
	return v, err
}

func viewOf(t any, free bool, s *viewSize) (any, error) {
	switch x := t.(type) {
	case string:
		return x, s.add(len(x))
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			v, err := viewOf(e, free, s)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(x)+1)
		bin := ""
		if !free {
			bin = binaryMember(x)
		}
		for k, e := range x {
			if err := s.add(len(k)); err != nil {
				return nil, err
			}
			if bin != "" && k == bin {
				continue
			}
			v, err := viewOf(e, free || freeMembers[k] || (k == "data" && bin == ""), s)
			if err != nil {
				return nil, err
			}
			out[k] = v
		}
		if bin != "" {
			enc := x[bin].(string)
			mt, _ := x["mimeType"].(string)
			if textMIME(mt) {
				b, err := base64.StdEncoding.DecodeString(enc)
				if err != nil {
					return nil, fmt.Errorf("read the %s of a %s payload: %w", bin, mt, err)
				}
				if err := s.add(len(b)); err != nil {
					return nil, err
				}
				out[bin] = string(b)
				out["size"] = json.Number(fmt.Sprint(len(b)))
			} else {
				out["size"] = json.Number(fmt.Sprint(base64.StdEncoding.DecodedLen(len(enc)) - strings.Count(enc[max0(len(enc)-2):], "=")))
			}
		}
		if !free {
			if t, _ := x["type"].(string); t == "resource" {
				if r, ok := x["resource"].(map[string]any); ok {
					if mt, ok := r["mimeType"].(string); ok && x["mimeType"] == nil {
						out["mimeType"] = mt
					}
				}
			}
		}
		return out, nil
	}
	return t, nil
}

func max0(n int) int {
	if n < 0 {
		return 0
	}
	return n
}

// redactTree replaces every match of pats in the strings of a wire tree
// (in place) a client reads: every value, the `type` of a protocol object
// and a progressToken (the client's own) excepted; the keys of free objects; binary payloads of a text or JSON
// MIME type, decoded and encoded again. It reports whether anything
// changed; two keys of one object that become one are errRedactedKeys.
func redactTree(t any, pats []*regexp.Regexp) (any, bool, error) {
	return redactNode(t, false, pats)
}

func redactNode(t any, free bool, pats []*regexp.Regexp) (any, bool, error) {
	switch x := t.(type) {
	case string:
		s, ok := redact(x, pats)
		return s, ok, nil
	case []any:
		changed := false
		for i := range x {
			v, ok, err := redactNode(x[i], free, pats)
			if err != nil {
				return nil, false, err
			}
			if ok {
				x[i], changed = v, true
			}
		}
		return x, changed, nil
	case map[string]any:
		changed := false
		bin := ""
		if !free {
			bin = binaryMember(x)
		}
		mt, _ := x["mimeType"].(string) // before it is redacted
		for k, e := range x {
			if (bin != "" && k == bin) || (!free && (k == "type" || k == "progressToken")) {
				continue
			}
			v, ok, err := redactNode(e, free || freeMembers[k] || (k == "data" && bin == ""), pats)
			if err != nil {
				return nil, false, err
			}
			if ok {
				x[k], changed = v, true
			}
		}
		if bin != "" && textMIME(mt) {
			b, err := base64.StdEncoding.DecodeString(x[bin].(string))
			if err != nil {
				return nil, false, fmt.Errorf("read the %s of a %s payload: %w", bin, mt, err)
			}
			if nb, ok := redactBytes(b, pats); ok {
				x[bin], changed = base64.StdEncoding.EncodeToString(nb), true
			}
		}
		if free {
			renamed := map[string]any{}
			for k, e := range x {
				if nk, ok := redact(k, pats); ok {
					delete(x, k)
					if _, dup := renamed[nk]; dup {
						return nil, false, errRedactedKeys
					}
					renamed[nk], changed = e, true
				}
			}
			for k, e := range renamed {
				if _, dup := x[k]; dup {
					return nil, false, errRedactedKeys
				}
				x[k] = e
			}
		}
		return x, changed, nil
	}
	return t, false, nil
}

// redactBytes is redact on bytes.
func redactBytes(b []byte, pats []*regexp.Regexp) ([]byte, bool) {
	changed := false
	for _, re := range pats {
		if re.Match(b) {
			b, changed = re.ReplaceAllLiteral(b, []byte(Redacted)), true
		}
	}
	return b, changed
}
