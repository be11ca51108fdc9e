package identity

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/toolgate/toolgate/internal/exactjson"
	"github.com/toolgate/toolgate/internal/fsx"
	"github.com/toolgate/toolgate/toolcall"
)

// Tokens is the caller source of a tokens file (docs/contract.md §8): it maps bearer
// tokens to callers. It holds only the SHA-256 digests
// of the tokens, never the tokens themselves. A *Tokens is immutable and
// safe for concurrent use; a nil *Tokens knows no token.
type Tokens struct {
	entries []tokenEntry
}

type tokenEntry struct {
	hash   [sha256.Size]byte
	caller *toolcall.Caller
}

// TokenEntry is one identity of a tokens file: the caller a token stands
// for, {subject, roles, claims}, the caller's one shape (docs/contract.md §2).
type TokenEntry = toolcall.Caller

// HashToken returns the lowercase hex SHA-256 digest of token: the key
// under which a tokens file lists it.
func HashToken(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

var hashKey = regexp.MustCompile(`^[0-9a-f]{64}$`)

// NewTokens builds Tokens from entries keyed by the hex SHA-256 digest of
// each token. Every invalid entry is reported in one *TokenFileError (with
// an empty Path).
func NewTokens(entries map[string]TokenEntry) (*Tokens, error) {
	keys := slices.Sorted(maps.Keys(entries))
	t := &Tokens{}
	var problems []TokenProblem
	for _, k := range keys {
		if p, ok := t.add(k, entries[k]); !ok {
			problems = append(problems, p)
		}
	}
	if len(problems) > 0 {
		return nil, &TokenFileError{Problems: problems}
	}
	return t, nil
}

// add validates one entry and keeps it; it returns the problem otherwise.
func (t *Tokens) add(key string, e TokenEntry) (TokenProblem, bool) {
	if !hashKey.MatchString(key) {
		p := TokenProblem{Message: "key is not a SHA-256 digest (64 lowercase hex characters)"}
		switch {
		case len(key) == 64 && hashKey.MatchString(strings.ToLower(key)):
			p.Key = strings.ToLower(key)[:12]
			p.Message += "; write it in lowercase"
		default:
			// The key may be a token pasted in by mistake: never show it.
			p.Message += "; list sha256(token), not the token itself"
		}
		return p, false
	}
	if strings.TrimSpace(e.Subject) == "" {
		return TokenProblem{Key: key[:12], Message: "subject is empty"}, false
	}
	if r, bad := nameProblem(e.Subject); bad {
		return TokenProblem{Key: key[:12], Message: "subject holds a " + r}, false
	}
	for i, role := range e.Roles {
		if r, bad := nameProblem(role); bad {
			return TokenProblem{Key: key[:12], Message: fmt.Sprintf("roles[%d] holds a %s", i, r)}, false
		}
	}
	if msg := claimsProblem(e.Claims); msg != "" {
		return TokenProblem{Key: key[:12], Message: msg}, false
	}
	var h [sha256.Size]byte
	_, _ = hex.Decode(h[:], []byte(key))
	for _, x := range t.entries {
		if x.hash == h {
			return TokenProblem{Key: key[:12], Message: "the same token is listed twice"}, false
		}
	}
	t.entries = append(t.entries, tokenEntry{hash: h, caller: &toolcall.Caller{
		Subject: e.Subject,
		Roles:   slices.Clone(e.Roles),
		Claims:  e.Claims,
	}})
	return TokenProblem{}, true
}

// claimsProblem says why claims cannot be a caller's claims, "" when they
// can. Every decision reads the claims in its input document, which holds
// them exactly or not at all (docs/contract.md §3): YAML's .inf and .nan, a number beyond
// OPA's range or a string that is not valid UTF-8 would make every decision
// for that caller fail, so the file is refused at load instead. The check is
// the engine's own conversion (exactjson.GoValue, what engine.CheckClaims
// runs), called here directly so that an identity source links no policy
// engine.
func claimsProblem(claims map[string]any) string {
	_, err := exactjson.GoValue(claims)
	if err == nil {
		return ""
	}
	var xe *exactjson.Error
	if errors.As(err, &xe) {
		at := "claims"
		if xe.Path != "" && xe.Path != "." {
			at += "." + xe.Path
		}
		return at + ": cannot be represented in a policy's input: " + xe.Reason
	}
	return "claims: " + err.Error()
}

// Len is the number of tokens known.
func (t *Tokens) Len() int {
	if t == nil {
		return 0
	}
	return len(t.entries)
}

// Lookup returns the caller that token stands for: LookupHash of the
// token's SHA-256. The caller returned is a copy the receiver may keep.
func (t *Tokens) Lookup(token string) (*toolcall.Caller, bool) {
	if t == nil {
		return nil, false
	}
	return t.LookupHash(sha256.Sum256([]byte(token)))
}

// LookupHash returns the caller of the token whose SHA-256 is sum. It
// compares sum with every entry's digest in constant time (crypto/subtle),
// without stopping at a match: how long a lookup takes says nothing about
// which entry, if any, matched, nor how close a guess came. Token files
// are small, so the linear scan costs nothing that matters. The caller
// returned is a copy the receiver may keep. With LookupHash, Tokens is an
// HashLookup: the chain hashes a token once for the
// tokens file and the verified-JWT cache.
func (t *Tokens) LookupHash(sum [sha256.Size]byte) (*toolcall.Caller, bool) {
	if t == nil {
		return nil, false
	}
	var found *toolcall.Caller
	for i := range t.entries {
		if subtle.ConstantTimeCompare(sum[:], t.entries[i].hash[:]) == 1 {
			found = t.entries[i].caller
		}
	}
	if found == nil {
		return nil, false
	}
	return CloneCaller(found), true
}

// CloneCaller returns a copy of c that shares nothing mutable with it
// (roles and the top level of claims are copied); nil for nil.
func CloneCaller(c *toolcall.Caller) *toolcall.Caller {
	if c == nil {
		return nil
	}
	return &toolcall.Caller{Subject: c.Subject, Roles: slices.Clone(c.Roles), Claims: maps.Clone(c.Claims)}
}

// TokenProblem is one invalid entry of a tokens file.
type TokenProblem struct {
	// Line is the entry's line in the file (1-based; 0 when unknown).
	Line int
	// Key is the first 12 characters of the entry's digest, for finding it;
	// empty when the key is not a digest (it may be a token pasted in by
	// mistake, and is never shown).
	Key     string
	Message string
}

// String renders p as `line 3: entry 0123456789ab…: empty subject`,
// leaving out what is unknown.
func (p TokenProblem) String() string { return tokenItem(p.Diag("")) }

// TokenFileError reports every invalid entry of a tokens file.
type TokenFileError struct {
	Path     string
	Problems []TokenProblem
	// Err is a failure to read or parse the file as a whole; nil otherwise.
	Err error
}

// Error renders `tokens <path>: <failure>` on the first line and every
// invalid entry on a line of its own below it, through [TokenFileError.List].
func (e *TokenFileError) Error() string { return e.List().Error() }

func (e *TokenFileError) Unwrap() error { return e.Err }

// ErrNoTokens: a tokens file lists no token.
var ErrNoTokens = errors.New("the file lists no token")

// LoadTokens reads a tokens file, JSON or YAML:
//
//	<sha256 hex of the token>: {subject: alice, roles: [manager], claims: {team: a}}
//
// It refuses the whole file, with a *TokenFileError naming every invalid
// entry (key not 64 lowercase hex characters, empty subject, an unknown
// field, a token listed twice, claims a policy's input cannot represent,
// such as .inf or .nan), when any entry is invalid.
func LoadTokens(path string) (*Tokens, error) {
	data, err := fsx.ReadFile(path)
	if err != nil {
		return nil, &TokenFileError{Path: path, Err: err}
	}
	t, err := parseTokens(data)
	if err != nil {
		var tfe *TokenFileError
		if errors.As(err, &tfe) {
			tfe.Path = path
			return nil, tfe
		}
		return nil, &TokenFileError{Path: path, Err: err}
	}
	return t, nil
}

// parseTokens reads JSON or YAML (JSON is YAML's flow style), keeping file
// order and line numbers for the problems it reports.
func parseTokens(data []byte) (*Tokens, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, ErrNoTokens
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("line %d: want a mapping of sha256 digests to {subject, roles, claims}", root.Line)
	}
	if len(root.Content) == 0 {
		return nil, ErrNoTokens
	}
	t := &Tokens{}
	var problems []TokenProblem
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		e, p, ok := decodeEntry(k, v)
		if ok {
			p, ok = t.add(k.Value, e)
		}
		if !ok {
			p.Line = k.Line
			problems = append(problems, p)
		}
	}
	if len(problems) > 0 {
		return nil, &TokenFileError{Problems: problems}
	}
	return t, nil
}

func decodeEntry(k, v *yaml.Node) (TokenEntry, TokenProblem, bool) {
	var e TokenEntry
	short := ""
	if hashKey.MatchString(k.Value) {
		short = k.Value[:12]
	}
	fail := func(format string, args ...any) (TokenEntry, TokenProblem, bool) {
		return e, TokenProblem{Key: short, Message: fmt.Sprintf(format, args...)}, false
	}
	if k.Kind != yaml.ScalarNode {
		return fail("key is not a string")
	}
	if v.Kind != yaml.MappingNode {
		return fail("want {subject, roles, claims}")
	}
	for j := 0; j+1 < len(v.Content); j += 2 {
		f, fv := v.Content[j], v.Content[j+1]
		var err error
		switch f.Value {
		case "subject":
			if fv.Kind != yaml.ScalarNode || fv.Tag != "!!str" {
				return fail("subject: want a string")
			}
			e.Subject = fv.Value
		case "roles":
			if err = fv.Decode(&e.Roles); err != nil || fv.Kind != yaml.SequenceNode && fv.Tag != "!!null" {
				return fail("roles: want a list of strings")
			}
			for _, r := range fv.Content {
				if r.Tag != "!!str" || r.Value == "" {
					return fail("roles: want a list of non-empty strings")
				}
			}
		case "claims":
			if err = fv.Decode(&e.Claims); err != nil || fv.Kind != yaml.MappingNode && fv.Tag != "!!null" {
				return fail("claims: want an object")
			}
		default:
			return fail("unknown field %q (want subject, roles, claims)", f.Value)
		}
	}
	return e, TokenProblem{}, true
}

// DemoTokenValue is the bearer token of the bundled example. It is public:
// anyone who reads this source knows it. Use it on a loopback address only.
const DemoTokenValue = "toolgate-demo-admin"

// DemoToken returns the bundled example's public demo token and Tokens
// knowing only it, for subject "demo" with role "admin" (so it sees every
// tool of the bundled example). `toolgate serve` uses it when run without
// --tokens on the bundled example, and prints it.
func DemoToken() (token string, tokens *Tokens) {
	t, err := NewTokens(map[string]TokenEntry{
		HashToken(DemoTokenValue): {Subject: "demo", Roles: []string{"admin"}, Claims: map[string]any{"demo": true}},
	})
	if err != nil {
		panic("identity: demo token: " + err.Error()) // a programmer's mistake
	}
	return DemoTokenValue, t
}

var _ HashLookup = (*Tokens)(nil)
