package identity_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/identity"
	"github.com/toolgate/toolgate/toolcall"
)

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

var (
	aliceHash = identity.HashToken("alice-token")
	bobHash   = identity.HashToken("bob-token")
)

func TestLoadTokens(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"tokens.yaml": aliceHash + ":\n  subject: alice\n  roles: [manager]\n  claims: {team: payments, level: 3}\n" +
			bobHash + ": {subject: bob}\n",
		"tokens.json": "{\n\t\"" + aliceHash + "\": {\"subject\": \"alice\", \"roles\": [\"manager\"], \"claims\": {\"team\": \"payments\", \"level\": 3}},\n\t\"" +
			bobHash + "\": {\"subject\": \"bob\"}\n}\n",
	}
	for name, content := range files {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tok, err := identity.LoadTokens(writeFile(t, name, content))
			require.NoError(t, err)
			assert.Equal(t, 2, tok.Len())
			c, ok := tok.Lookup("alice-token")
			require.True(t, ok)
			assert.Equal(t, &toolcall.Caller{Subject: "alice", Roles: []string{"manager"}, Claims: map[string]any{"team": "payments", "level": 3}}, c)
			c, ok = tok.Lookup("bob-token")
			require.True(t, ok)
			assert.Equal(t, "bob", c.Subject)
			assert.Empty(t, c.Roles)
			_, ok = tok.Lookup(aliceHash) // the digest is not the token
			assert.False(t, ok)
			_, ok = tok.Lookup("")
			assert.False(t, ok)
		})
	}
}

func TestLookupReturnsACopy(t *testing.T) {
	t.Parallel()
	tok, err := identity.NewTokens(map[string]identity.TokenEntry{aliceHash: {Subject: "alice", Roles: []string{"manager"}}})
	require.NoError(t, err)
	c, _ := tok.Lookup("alice-token")
	c.Roles[0] = "admin"
	c, _ = tok.Lookup("alice-token")
	assert.Equal(t, []string{"manager"}, c.Roles)
	var none *identity.Tokens
	_, ok := none.Lookup("alice-token")
	assert.False(t, ok)
}

func TestLoadTokensReportsEveryBadEntry(t *testing.T) {
	t.Parallel()
	const rawToken = "my-secret-token-pasted-by-mistake"
	content := strings.Join([]string{
		aliceHash + ": {subject: alice}",                     // 1: good
		rawToken + ": {subject: eve}",                        // 2: a raw token as key
		strings.ToUpper(bobHash) + ": {subject: bob}",        // 3: uppercase
		identity.HashToken("c") + ": {subject: \"\"}",        // 4: empty subject
		identity.HashToken("d") + ": {roles: [x]}",           // 5: no subject
		identity.HashToken("e") + ": {subject: e, role: x}",  // 6: unknown field
		identity.HashToken("f") + ": {subject: f, roles: x}", // 7: roles not a list
		"",
	}, "\n")
	lines, err := tokenFileProblems(t, content)
	assert.Equal(t, []int{2, 3, 4, 5, 6, 7}, lines)
	msg := err.Error()
	assert.NotContains(t, msg, rawToken, "a token never reaches a message")
	for _, want := range []string{
		"line 2: key is not a SHA-256 digest (64 lowercase hex characters); list sha256(token), not the token itself",
		"line 3: entry " + bobHash[:12] + "…: key is not a SHA-256 digest (64 lowercase hex characters); write it in lowercase",
		"line 4: entry " + identity.HashToken("c")[:12] + "…: subject is empty",
		"line 5: entry " + identity.HashToken("d")[:12] + "…: subject is empty",
		`line 6: entry ` + identity.HashToken("e")[:12] + `…: unknown field "role" (want subject, roles, claims)`,
		"line 7: entry " + identity.HashToken("f")[:12] + "…: roles: want a list of strings",
	} {
		assert.Contains(t, msg, want)
	}
}

func TestLoadTokensFileProblems(t *testing.T) {
	t.Parallel()
	_, err := identity.LoadTokens(filepath.Join(t.TempDir(), "missing.yaml"))
	require.ErrorIs(t, err, os.ErrNotExist)
	_, err = identity.LoadTokens(writeFile(t, "empty.yaml", ""))
	require.ErrorIs(t, err, identity.ErrNoTokens)
	_, err = identity.LoadTokens(writeFile(t, "list.yaml", "- a\n"))
	var tfe *identity.TokenFileError
	require.ErrorAs(t, err, &tfe)
	_, err = identity.LoadTokens(writeFile(t, "dup.yaml", aliceHash+": {subject: a}\n"+aliceHash+": {subject: b}\n"))
	require.ErrorContains(t, err, "line 2: entry "+aliceHash[:12]+"…: the same token is listed twice")
	require.False(t, errors.Is(err, identity.ErrNoTokens))
}

func TestDemoToken(t *testing.T) {
	t.Parallel()
	token, tok := identity.DemoToken()
	assert.Equal(t, "toolgate-demo-admin", token)
	c, ok := tok.Lookup(token)
	require.True(t, ok)
	assert.Equal(t, "demo", c.Subject)
	assert.Equal(t, []string{"admin"}, c.Roles)
}

// TestTokenRolesNullIsNoRoles: `roles: null` (YAML's ~, JSON's null) is an
// entry without roles, like one that leaves roles out; a scalar or a map
// there is refused.
func TestTokenRolesNullIsNoRoles(t *testing.T) {
	t.Parallel()
	for name, content := range map[string]string{
		"null.yaml":  bobHash + ": {subject: bob, roles: null}\n",
		"tilde.yaml": bobHash + ": {subject: bob, roles: ~}\n",
		"null.json":  `{"` + bobHash + `": {"subject": "bob", "roles": null}}`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tok, err := identity.LoadTokens(writeFile(t, name, content))
			require.NoError(t, err)
			c, ok := tok.Lookup("bob-token")
			require.True(t, ok)
			assert.Equal(t, "bob", c.Subject)
			assert.Empty(t, c.Roles)
		})
	}
	for name, content := range map[string]string{
		"scalar.yaml": bobHash + ": {subject: bob, roles: manager}\n",
		"map.yaml":    bobHash + ": {subject: bob, roles: {a: b}}\n",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := identity.LoadTokens(writeFile(t, name, content))
			require.ErrorContains(t, err, "roles: want a list of strings")
		})
	}
}

// TestTokensFileRefusesControlCharactersInNames:
// a subject or role of the tokens file holding a control or format
// character (a NUL that could alias a role set, a newline that could forge
// a log line, a bidi override) is a load error naming the entry and the
// character; the file is refused whole.
func TestTokensFileRefusesControlCharactersInNames(t *testing.T) {
	t.Parallel()
	content := strings.Join([]string{
		aliceHash + ": {subject: alice, roles: [admin, ww]}",                    // 1: good
		identity.HashToken("a") + ": {subject: \"ann\\0x\"}",                    // 2: NUL in the subject
		identity.HashToken("b") + ": {subject: \"bob\\nroot\"}",                 // 3: newline in the subject
		identity.HashToken("c") + ": {subject: c, roles: [ok, \"admin\\0ww\"]}", // 4: NUL in a role
		identity.HashToken("d") + ": {subject: d, roles: [\"x\\u202Ey\"]}",      // 5: bidi override in a role
		identity.HashToken("e") + ": {subject: \"zoë\", roles: [gérant]}",       // 6: good
		"",
	}, "\n")
	lines, err := tokenFileProblems(t, content)
	assert.Equal(t, []int{2, 3, 4, 5}, lines)
	for _, want := range []string{
		"line 2: entry " + identity.HashToken("a")[:12] + "…: subject holds a control character U+0000",
		"line 3: entry " + identity.HashToken("b")[:12] + "…: subject holds a control character U+000A",
		"line 4: entry " + identity.HashToken("c")[:12] + "…: roles[1] holds a control character U+0000",
		"line 5: entry " + identity.HashToken("d")[:12] + "…: roles[0] holds a control character U+202E",
	} {
		assert.Contains(t, err.Error(), want)
	}
}

// tokenFileProblems loads a tokens file of content, requires it refused
// with a TokenFileError, and returns the lines of its problems, in its
// order, and that error.
func tokenFileProblems(t *testing.T, content string) (lines []int, err error) {
	t.Helper()
	_, err = identity.LoadTokens(writeFile(t, "tokens.yaml", content))
	var tfe *identity.TokenFileError
	require.ErrorAs(t, err, &tfe)
	for _, p := range tfe.Problems {
		lines = append(lines, p.Line)
	}
	return lines, err
}
