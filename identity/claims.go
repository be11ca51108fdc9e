package identity

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/toolgate/toolgate/internal/exactjson"
	"github.com/toolgate/toolgate/toolcall"
)

// maxClaimsDepth bounds the nesting the claims decoder follows. Tokens are
// at most MaxTokenLen long, so this only keeps the recursion shallow.
const maxClaimsDepth = 32

// CallerFromClaims builds the caller a verified token's claims set stands
// for (docs/contract.md §12), without checking any signature or time: `toolgate
// explain --claims` shows it, and JWT.Verify calls it after verifying.
// payload is the claims set as the token carries it (JSON). s should have
// its defaults (WithDefaults); empty claim paths mean sub and roles.
//
// A policy sees exactly what runs, so payload is refused (an invalid token
// error) rather than read differently: when it is not a JSON object of
// valid UTF-8, holds a member name twice at any level (RFC 7519 §4), or a
// number the policy engine cannot represent exactly (a binary exponent
// beyond ±100000, such as 1e99999). The subject claim must be a non-empty
// string. The roles claim, when present and not null, must be an array of
// strings or a space-separated string.
//
// The subject and every role must hold no control or format character
// (Unicode Cc and Cf: NUL, newline, bidi overrides, zero-width marks): they
// name the caller in logs, audit and approvals, and key caches.
//
// Claims are the whole payload, exactly as decoded: unlike `_meta`, nothing
// is dropped (a deny rule over a 200-entry groups claim, or the 33rd claim,
// sees it), since a verified token is already bounded by MaxTokenLen.
// Numbers keep their exact text (json.Number). A payload the policy could
// not see exactly (a lone surrogate escape, say) is refused.
func CallerFromClaims(payload []byte, s Settings) (*toolcall.Caller, error) {
	all, err := decodeClaims(payload)
	if err != nil {
		return nil, err
	}
	subjectPath, rolesPath := s.SubjectClaim, s.RolesClaim
	if subjectPath == "" {
		subjectPath = DefaultSubjectClaim
	}
	if rolesPath == "" {
		rolesPath = DefaultRolesClaim
	}
	sv, _ := lookupPath(all, subjectPath)
	subject, ok := sv.(string)
	if !ok || strings.TrimSpace(subject) == "" {
		return nil, invalid(fmt.Sprintf("subject claim %q is missing or not a non-empty string", subjectPath), nil)
	}
	if r, bad := nameProblem(subject); bad {
		return nil, invalid(fmt.Sprintf("subject claim %q holds %s", subjectPath, r), nil)
	}
	roles, err := rolesOf(all, rolesPath)
	if err != nil {
		return nil, err
	}
	for _, role := range roles {
		if r, bad := nameProblem(role); bad {
			return nil, invalid(fmt.Sprintf("roles claim %q holds a role with %s", rolesPath, r), nil)
		}
	}
	if _, err := exactjson.Value(payload); err != nil {
		return nil, invalid("claims cannot be represented exactly", err)
	}
	return &toolcall.Caller{
		Subject: subject,
		Roles:   roles,
		Claims:  all,
	}, nil
}

// nameProblem reports whether s, a subject or a role, holds a control or
// format character (Unicode Cc or Cf), and then names the first one as
// "control character U+XXXX" (never s itself: it may be a secret pasted in
// the wrong place). Such names are refused wherever callers come from
// (tokens, the tokens file): a NUL or a newline in a name could make two
// callers look alike to a cache or a reader of the logs.
func nameProblem(s string) (string, bool) {
	for _, r := range s {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return fmt.Sprintf("control character %U", r), true
		}
	}
	return "", false
}

// decodeClaims decodes payload exactly, or refuses it.
func decodeClaims(payload []byte) (map[string]any, error) {
	if !utf8.Valid(payload) {
		return nil, invalid("claims are not valid UTF-8", nil)
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	v, err := decodeValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, invalid("claims: data after the JSON object", nil)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, invalid("claims are not a JSON object", nil)
	}
	return obj, nil
}

var errDepth = errors.New("nesting deeper than 32 levels")

func decodeValue(dec *json.Decoder, depth int) (any, error) {
	if depth > maxClaimsDepth {
		return nil, invalid("claims", errDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, invalid("claims are not valid JSON", err)
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			obj := map[string]any{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, invalid("claims are not valid JSON", err)
				}
				k := kt.(string)
				if _, dup := obj[k]; dup {
					return nil, invalid(fmt.Sprintf("claims: member %q appears twice", k), nil)
				}
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				obj[k] = v
			}
			_, err = dec.Token() // '}'
			return obj, err
		case '[':
			arr := []any{}
			for dec.More() {
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			_, err = dec.Token() // ']'
			return arr, err
		}
		return nil, invalid("claims are not valid JSON", nil)
	case json.Number:
		if _, err := ast.NumberChecked(string(t)); err != nil {
			return nil, invalid("claims: a number the policy engine cannot represent exactly", err)
		}
		return t, nil
	default:
		return t, nil
	}
}

// lookupPath finds a dotted path in claims. At each level a member named
// by the whole remaining path wins (so a namespaced claim such as
// "https://example.com/roles" is found whole); otherwise the path is split
// at each dot in turn, leftmost first.
func lookupPath(obj map[string]any, path string) (any, bool) {
	if v, ok := obj[path]; ok {
		return v, true
	}
	for i := 0; i < len(path); i++ {
		if path[i] != '.' {
			continue
		}
		if sub, ok := obj[path[:i]].(map[string]any); ok {
			if v, ok := lookupPath(sub, path[i+1:]); ok {
				return v, true
			}
		}
	}
	return nil, false
}

// rolesOf reads the roles claim: absent or null is no role; an array must
// hold only strings; a string is split at spaces (like OAuth's scope).
func rolesOf(claims map[string]any, path string) ([]string, error) {
	v, ok := lookupPath(claims, path)
	if !ok || v == nil {
		return nil, nil
	}
	switch r := v.(type) {
	case string:
		return strings.Fields(r), nil
	case []any:
		roles := make([]string, 0, len(r))
		for _, x := range r {
			s, ok := x.(string)
			if !ok {
				return nil, invalid(fmt.Sprintf("roles claim %q holds a value that is not a string", path), nil)
			}
			roles = append(roles, s)
		}
		return roles, nil
	default:
		return nil, invalid(fmt.Sprintf("roles claim %q is neither an array of strings nor a string", path), nil)
	}
}
