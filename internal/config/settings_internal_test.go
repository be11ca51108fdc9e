package config

import (
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/upstream"
)

// TestSettingsTableMakesTheFlags walks serve's flag set against the table:
// every flag is a setting's, its usage (and so the default -h prints) is
// the one the table renders, the flag package itself holds no default, and
// every setting with a flag has it.
func TestSettingsTableMakesTheFlags(t *testing.T) {
	t.Parallel()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	ServeFlags(fs)
	seen := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) {
		st, ok := lookupFlag(f.Name)
		require.True(t, ok, "the flag --%s is no setting of the table", f.Name)
		assert.Equal(t, st.FlagUsage(), f.Usage, "--%s: its usage is not the table's", f.Name)
		assert.Empty(t, f.DefValue, "--%s: a default the flag package prints besides the table's", f.Name)
		seen[f.Name] = true
	})
	for _, st := range settings {
		if st.Flag != "" {
			assert.True(t, seen[st.Flag], "the setting %s has the flag --%s, not registered", st.Key, st.Flag)
		}
		if st.entry != nil {
			// --upstream sets an entry whole; its keys are the file's alone.
			assert.Empty(t, st.Flag, "%s: a flag for a key of an entry", st.Key)
			assert.Nil(t, st.field, "%s: a key of an entry with a field of Serve", st.Key)
		}
	}
}

// TestSettingsTableIsWellFormed: keys are snake_case and unique, old keys
// camelCase and unique, flags unique; every setting says what it does and,
// when the file may set it, what its value must be; at most one of Default
// and Unset.
func TestSettingsTableIsWellFormed(t *testing.T) {
	t.Parallel()
	snake := regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$`)
	camel := regexp.MustCompile(`^[a-z]+([A-Z][a-z0-9]*)+$`)
	names := map[string]bool{}
	flags := map[string]bool{}
	for _, st := range settings {
		name := st.Key + st.Flag
		assert.NotEmpty(t, st.Usage, "%s: undocumented", name)
		assert.False(t, st.Default != "" && st.Unset != "", "%s: a default and an unset text", name)
		if st.Flag != "" {
			assert.False(t, flags[st.Flag], "--%s twice", st.Flag)
			flags[st.Flag] = true
		}
		if st.Key == "" {
			continue
		}
		assert.Regexp(t, snake, st.Key)
		assert.False(t, names[st.Key], "%s twice", st.Key)
		names[st.Key] = true
		if st.Old != "" {
			assert.Regexp(t, camel, st.Old)
			assert.Equal(t, strings.ReplaceAll(st.Key, "_", ""), strings.ToLower(st.Old), "%s is not the old %s renamed", st.Key, st.Old)
			assert.False(t, names[st.Old], "%s twice", st.Old)
			names[st.Old] = true
		}
		switch {
		case st.entry != nil:
			assert.Empty(t, st.Want, "%s: a text for a wrong value that the entry's error does not say", st.Key)
		case !st.section && !st.list:
			assert.NotEmpty(t, st.Want, "%s: no text for a wrong value", st.Key)
		}
		if i := strings.LastIndex(st.Key, "."); i > 0 {
			parent, ok := fileKey(st.Key[:i])
			require.True(t, ok, "%s: no section %s", st.Key, st.Key[:i])
			assert.True(t, parent.section || parent.list, "%s: %s is not a section", st.Key, st.Key[:i])
		}
	}
}

// TestEveryFieldIsASetting: every field of Serve (and of its auth, shadow,
// bundle, HTTP server, approvals, decision log and tracing sections,
// which the table lists key by key), and every field of an upstream and of its auth, is some setting's
// value, found by address:
// a field no setting names could be set by nothing, or by a second,
// hidden declaration.
func TestEveryFieldIsASetting(t *testing.T) {
	t.Parallel()
	s := &Serve{}
	u := &upstream.Settings{}
	var spans [][2]uintptr
	for _, st := range settings {
		var p any
		switch {
		case st.field != nil:
			p = st.field(s)
		case st.entry != nil:
			p = st.entry(u) // upstreams.auth comes before its keys: u.Auth is set
		default:
			continue
		}
		v := reflect.ValueOf(p).Elem()
		start := v.Addr().Pointer()
		spans = append(spans, [2]uintptr{start, start + v.Type().Size()})
	}
	covered := func(addr uintptr) bool {
		for _, sp := range spans {
			if sp[0] <= addr && addr < sp[1] {
				return true
			}
		}
		return false
	}
	var walk func(v reflect.Value, path string, sections ...string)
	walk = func(v reflect.Value, path string, sections ...string) {
		for i := range v.NumField() {
			f := v.Type().Field(i)
			fv := v.Field(i)
			name := path + f.Name
			if slices.Contains(sections, f.Name) && f.Type.Kind() == reflect.Struct {
				walk(fv, name+".", sections...)
				continue
			}
			assert.True(t, covered(uintptr(unsafe.Pointer(fv.UnsafeAddr()))), "%s is no setting of the table", name)
		}
	}
	walk(reflect.ValueOf(s).Elem(), "Serve.", "Auth", "Shadow", "Bundle", "HTTPServer", "Approvals", "DecisionLog", "Tracing", "Credentials", "Bearer", "Polling", "Signing")
	walk(reflect.ValueOf(u).Elem(), "Upstream.")
	walk(reflect.ValueOf(u.Auth).Elem(), "Upstream.Auth.")
}

// TestDefaultsAreTheTables: the defaults SetDefaults fills in are the ones
// the table documents, and no Go file of this package or of the binary
// writes a setting's default text or value a second time (the table takes
// each from its owner's constant).
func TestDefaultsAreTheTables(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	s := &Serve{}
	require.NoError(t, s.SetDefaults())
	for key, got := range map[string]string{"http": s.HTTP, "audit": s.Audit, "watch": strconv.FormatBool(*s.Watch)} {
		st, ok := fileKey(key)
		require.True(t, ok)
		assert.Equal(t, st.Default, got, key)
	}

	literals := map[string][]string{} // string literal → where
	for _, dir := range []string{".", "../../cmd/toolgate"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		require.NoError(t, err)
		for _, file := range files {
			if strings.HasSuffix(file, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
			require.NoError(t, err)
			ast.Inspect(f, func(n ast.Node) bool {
				if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					v, err := strconv.Unquote(lit.Value)
					require.NoError(t, err)
					literals[v] = append(literals[v], file)
				}
				return true
			})
		}
	}
	looksLikeValue := regexp.MustCompile(`[0-9/:]`) // a word (sub, admin, base) is also a key or a name
	for v, where := range literals {
		for _, st := range settings {
			if d := st.DefaultText(); d != "" {
				for _, in := range []string{"(" + d + ")", "(" + d + ";", "; " + d + ")"} {
					assert.NotContains(t, v, in, "the default of %s written again in %v", st.Key+st.Flag, where)
				}
			}
			if looksLikeValue.MatchString(st.Default) && v == st.Default {
				// Its one declaration: a constant of this package.
				assert.Len(t, where, 1, "the default %q of %s is written %d times: %v", v, st.Key, len(where), where)
			}
		}
	}
}

// TestEveryKeyIsDocumented: the settings reference page names every key,
// every old key and every flag.
func TestEveryKeyIsDocumented(t *testing.T) {
	t.Parallel()
	page, err := os.ReadFile("../../docs/settings.md")
	require.NoError(t, err, "go generate ./cmd/toolgate writes it")
	for _, st := range settings {
		if st.Key != "" {
			assert.Contains(t, string(page), "`"+st.Key+"`")
		}
		if st.Old != "" {
			assert.Contains(t, string(page), "`"+st.Old+"`")
		}
		if st.Flag != "" {
			assert.Contains(t, string(page), "`--"+st.Flag)
		}
	}
}

// TestOldKeysAreReadWithAWarning: a camelCase key is read as its
// snake_case setting and logged as a warning naming both and the line;
// giving both names is "set twice".
func TestOldKeysAreReadWithAWarning(t *testing.T) {
	t.Parallel()
	s, warnings, err := parseFile([]byte("http: 127.0.0.1:1\nhookTimeout: 3s\nsession_timeout: 1m\nmaxSessions: 5\n"))
	require.NoError(t, err)
	assert.Equal(t, int64(3e9), int64(s.HookTimeout))
	assert.Equal(t, 5, s.HTTPServer.MaxSessions)
	assert.Equal(t, []Problem{
		{Line: 2, Key: "hookTimeout", Message: "hookTimeout is now named hook_timeout; the old name is read until the next release"},
		{Line: 4, Key: "maxSessions", Message: "maxSessions is now named max_sessions; the old name is read until the next release"},
	}, warnings)

	_, _, err = parseFile([]byte("hook_timeout: 3s\nhookTimeout: 4s\n"))
	require.Error(t, err)
	assert.Equal(t, "line 2: hookTimeout: set twice", err.(*Error).Problems[0].String())
}

// TestLoadServeLogsOldKeys: LoadServe logs the warning to its stderr, as
// toolgate logs (slog text), with file, line and key.
func TestLoadServeLogsOldKeys(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "toolgate.yaml")
	require.NoError(t, os.WriteFile(path, []byte("ledger: memory\nadminRole: ops\n"), 0o600))
	var stderr strings.Builder
	s, err := LoadServe([]string{"--config", path}, &stderr)
	require.NoError(t, err)
	assert.Equal(t, "ops", s.HTTPServer.AdminRole)
	assert.Contains(t, stderr.String(), `level=WARN msg="config: adminRole is now named admin_role; the old name is read until the next release" file=`+path+" line=2 key=adminRole\n")

	require.NoError(t, os.WriteFile(path, []byte("ledger: memory\nadmin_role: ops\n"), 0o600))
	stderr.Reset()
	_, err = LoadServe([]string{"--config", path}, &stderr)
	require.NoError(t, err)
	assert.Empty(t, stderr.String(), "the new name: no warning")
}

// TestFileIsDecodedStrictly: an unknown key, at the top or in a section,
// is an error naming it and its line; so is a key of a section written at
// the top level.
func TestFileIsDecodedStrictly(t *testing.T) {
	t.Parallel()
	for file, want := range map[string]string{
		"http: :1\n\nsesion_timeout: 1m\n":                         `line 3: unknown key "sesion_timeout" (did you mean "session_timeout"? known: registry, `,
		"auth:\n  issuer: https://x\n  iss: y\n":                   `line 3: unknown key "iss" in auth (known: issuer, jwks, resource, audiences, subject_claim, roles_claim, scopes_supported, allow_anonymous)`,
		"shadow:\n  policy: p\n  polcy: q\n":                       `line 3: unknown key "polcy" in shadow (did you mean "policy"? known: policy, registry, bundle)`,
		"auth.issuer: https://x\n":                                 `line 1: unknown key "auth.issuer" (known: `,
		"shadow: p\n":                                              `line 1: shadow: want a mapping of policy, registry, bundle`,
		"watch: true\nWatch: false\n":                              `line 2: unknown key "Watch" (did you mean "watch"?`,
		"upstreams:\n  - name: a\n    command: x\n    comand: y\n": `line 4: upstreams[0]: unknown key "comand" (did you mean "command"? known: name, command, args, url, import, section, trust_annotations, pin, prefix, remember, headers, env, inherit_env, timeout, auth)`,
		"upstreams:\n  - a=b\n  - name: c\n    url: https://c\n    auth:\n      type: client_credentials\n      tokenUrl: https://t\n": `line 7: upstreams[1]: unknown key "tokenUrl" in auth (did you mean "token_url"? known: type, token_url, client_id, client_secret, scopes, resource, audience)`,
		// An upstream's keys never had camelCase names: one is unknown.
		"upstreams:\n  - {name: a, command: x, import: true,\n     trustAnnotations: true}\n": `line 3: upstreams[0]: unknown key "trustAnnotations" (did you mean "trust_annotations"? known: `,
		"upstreams:\n  - name: a\n    url: https://a\n    auth: client_credentials\n":         `line 4: upstreams[0]: auth: want a mapping of type, token_url, client_id, client_secret, scopes, resource, audience`,
		"upstreams:\n  - name: a\n    url: https://a\n    auth: {type: x, type: y}\n":         `line 4: upstreams[0]: auth.type: set twice`,
		"upstreams:\n  - name: a\n    url: https://a\n    auth: {scopes: read}\n":             `line 4: upstreams[0]: auth.scopes: wrong kind of value`,
	} {
		_, _, err := parseFile([]byte(file))
		require.Error(t, err, file)
		assert.True(t, strings.HasPrefix(err.(*Error).Problems[0].String(), want), "%q: %v", file, err)
	}
}

// FuzzParseFile: any file decodes or fails with problems that each carry
// the line they are about; nothing panics.
func FuzzParseFile(f *testing.F) {
	f.Add([]byte("registry: r.yaml\nhookTimeout: 3s\nauth:\n  issuer: https://x\nupstreams:\n  - a=b\n"))
	f.Add([]byte("shadow: {policy: p}\nbundle: {url: http://x/b, polling: {min_delay_seconds: 1}}\n"))
	f.Add([]byte("watch: [1]\nwatch: 2\nmax_sessions: -1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, _, err := parseFile(data)
		if err != nil {
			if ce, ok := err.(*Error); ok {
				for _, p := range ce.Problems {
					if p.Line < 1 {
						t.Fatalf("a problem without its line: %+v", p)
					}
				}
			}
			return
		}
		_ = s.Validate()
	})
}
