package config_test

import (
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/upstream"
)

// problems are the texts of a *config.Error's problems; err must be one.
func problems(t *testing.T, err error) []string {
	t.Helper()
	var ce *config.Error
	require.ErrorAs(t, err, &ce)
	var got []string
	for _, p := range ce.Problems {
		got = append(got, p.String())
	}
	return got
}

func ptr[T any](v T) *T { return &v }

func writeConfig(t *testing.T, content string) (path, dir string) {
	t.Helper()
	dir = t.TempDir()
	path = filepath.Join(dir, "toolgate.yaml")
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return path, dir
}

const fullConfig = `
registry: reg.yaml
policy: /etc/toolgate/rego
stdio: false
http: 0.0.0.0:9000
as: alice
roles: [manager, admin]
tokens: tokens.yaml
upstreams:
  - files=npx -y @modelcontextprotocol/server-filesystem /tmp
  - { name: weather, url: "https://weather.example/mcp", import: true, section: weather, trust_annotations: true }
  - { name: git, command: uvx, args: [mcp-server-git, --repository, .] }
ledger: sqlite:state/ledger.db
ledgerRetention: 1h
audit: audit.jsonl
watch: false
hookTimeout: 3s
evalTimeout: 100ms
`

// TestPrecedence: defaults < config file < flags actually set.
func TestPrecedence(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	defLedger := "sqlite:" + filepath.Join(state, "toolgate", "ledger.db")
	cfg, dir := writeConfig(t, fullConfig)
	fromFile := func() *config.Serve {
		return &config.Serve{
			Config:   cfg,
			Registry: filepath.Join(dir, "reg.yaml"),
			Policy:   "/etc/toolgate/rego",
			HTTP:     "0.0.0.0:9000",
			As:       "alice",
			Roles:    []string{"manager", "admin"},
			Tokens:   filepath.Join(dir, "tokens.yaml"),
			Upstreams: []upstream.Settings{
				{Name: "files", Command: "npx -y @modelcontextprotocol/server-filesystem /tmp"},
				{Name: "weather", URL: "https://weather.example/mcp", Import: true, Section: "weather", TrustAnnotations: true},
				{Name: "git", Command: "uvx", Args: []string{"mcp-server-git", "--repository", "."}},
			},
			Ledger:          "sqlite:" + filepath.Join(dir, "state/ledger.db"),
			LedgerRetention: time.Hour,
			Audit:           filepath.Join(dir, "audit.jsonl"),
			Watch:           ptr(false),
			HookTimeout:     3 * time.Second,
			EvalTimeout:     100 * time.Millisecond,
		}
	}
	cases := []struct {
		name string
		args []string
		want func() *config.Serve
	}{
		{"no flags: defaults", nil, func() *config.Serve {
			return &config.Serve{HTTP: "127.0.0.1:8787", Audit: "-", Ledger: defLedger, Watch: ptr(true)}
		}},
		{"flags alone", []string{"--registry", "r.yaml", "--policy", "p", "--http", ":1", "--as", "bob", "--role", "a", "--role", "b",
			"--tokens", "t.json", "--upstream", "x=http://x/mcp", "--ledger", "memory", "--audit", "a.log", "--no-watch",
			"--hook-timeout", "1s", "--eval-timeout", "2s"}, func() *config.Serve {
			return &config.Serve{Registry: "r.yaml", Policy: "p", HTTP: ":1", As: "bob", Roles: []string{"a", "b"}, Tokens: "t.json",
				Upstreams: []upstream.Settings{{Name: "x", URL: "http://x/mcp"}}, Ledger: "memory", Audit: "a.log", Watch: ptr(false),
				HookTimeout: time.Second, EvalTimeout: 2 * time.Second}
		}},
		{"--stdio alone: no HTTP", []string{"--stdio"}, func() *config.Serve {
			return &config.Serve{Stdio: true, Audit: "-", Ledger: defLedger, Watch: ptr(true)}
		}},
		{"--stdio with --http: both", []string{"--stdio", "--http", "127.0.0.1:1"}, func() *config.Serve {
			return &config.Serve{Stdio: true, HTTP: "127.0.0.1:1", Audit: "-", Ledger: defLedger, Watch: ptr(true)}
		}},
		{"file alone", []string{"--config", cfg}, fromFile},
		{"file, flags win", []string{"--config", cfg, "--http", "127.0.0.1:1", "--role", "viewer", "--watch", "--ledger", "memory", "--audit", "-",
			"--registry", "mine.yaml", "--hook-timeout", "5s", "--ledger-retention", "48h"}, func() *config.Serve {
			s := fromFile()
			s.LedgerRetention = 48 * time.Hour
			s.HTTP, s.Roles, s.Watch, s.Ledger, s.Audit = "127.0.0.1:1", []string{"viewer"}, ptr(true), "memory", "-"
			s.Registry = "mine.yaml" // a flag's path is the working directory's
			s.HookTimeout = 5 * time.Second
			return s
		}},
		{"flags before --config win too", []string{"--as", "carol", "--config", cfg}, func() *config.Serve {
			s := fromFile()
			s.As = "carol"
			return s
		}},
		{"--upstream replaces the file's upstream of that name, keeps import, section, trust_annotations", []string{"--config", cfg,
			"--upstream", "weather=http://localhost:9/mcp", "--upstream", "extra=./server --flag"}, func() *config.Serve {
			s := fromFile()
			s.Upstreams[1] = upstream.Settings{Name: "weather", URL: "http://localhost:9/mcp", Import: true, Section: "weather", TrustAnnotations: true}
			s.Upstreams = append(s.Upstreams, upstream.Settings{Name: "extra", Command: "./server --flag"})
			return s
		}},
		{"--watch then --no-watch: last wins", []string{"--config", cfg, "--watch", "--no-watch"}, fromFile},
		{"--no-watch then --watch: last wins", []string{"--no-watch", "--watch"}, func() *config.Serve {
			return &config.Serve{HTTP: "127.0.0.1:8787", Audit: "-", Ledger: defLedger, Watch: ptr(true)}
		}},
		{"--watch=false", []string{"--watch=false"}, func() *config.Serve {
			return &config.Serve{HTTP: "127.0.0.1:8787", Audit: "-", Ledger: defLedger, Watch: ptr(false)}
		}},
		{"sqlite: alone is the state directory", []string{"--ledger", "sqlite:"}, func() *config.Serve {
			return &config.Serve{HTTP: "127.0.0.1:8787", Audit: "-", Ledger: defLedger, Watch: ptr(true)}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := config.LoadServe(tc.args, io.Discard)
			require.NoError(t, err)
			assert.Equal(t, tc.want(), got)
		})
	}
}

func TestStateDirWithoutXDG(t *testing.T) {
	home := t.TempDir()
	t.Setenv("XDG_STATE_HOME", "relative/is/ignored")
	t.Setenv("HOME", home)
	d, err := config.StateDir()
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(home, ".local", "state", "toolgate"), d)
}

func TestUnknownKeys(t *testing.T) {
	t.Parallel()
	cfg, _ := writeConfig(t, "registry: r.yaml\npolicies: rego\nupstreams:\n  - {name: a, command: x, imports: true}\nwatch: maybe\n")
	_, err := config.LoadServe([]string{"--config", cfg}, io.Discard)
	var ce *config.Error
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, cfg, ce.Path)
	// The list of known keys grows with the settings: only its start is pinned.
	require.NotEmpty(t, ce.Problems)
	assert.True(t, strings.HasPrefix(ce.Problems[0].Message, `unknown key "policies" (did you mean "policy"? known: registry, policy, stdio, http, as, roles, tokens, upstreams, ledger, ledger_retention, audit, watch, hook_timeout, eval_timeout, `), ce.Problems[0].Message)
	got := append([]config.Problem(nil), ce.Problems...)
	got[0].Message = ""
	assert.Equal(t, []config.Problem{
		{Line: 2},
		{Line: 4, Key: "upstreams[0]", Message: `unknown key "imports" (did you mean "import"? known: name, command, args, url, import, section, trust_annotations, pin, prefix, remember, headers, env, inherit_env, timeout, auth)`},
		{Line: 5, Key: "watch", Message: "want true or false"},
	}, got)
	assert.Contains(t, err.Error(), `line 2: unknown key "policies"`)
}

func TestFileValueKinds(t *testing.T) {
	t.Parallel()
	cfg, _ := writeConfig(t, "roles: admin\nhookTimeout: 10\nstdio: yes please\nas: [x]\nupstreams: {a: b}\nhttp: :1\nhttp: :2\n")
	_, err := config.LoadFile(cfg)
	got := problems(t, err)
	assert.Equal(t, []string{
		"line 1: roles: want a list of role names",
		"line 2: hookTimeout: want a positive duration such as 10s",
		"line 3: stdio: want true or false",
		"line 4: as: want a subject (string)",
		"line 5: upstreams: want a list of upstreams",
		"line 7: http: set twice",
	}, got)
}

func TestEmptyFileAndMissingFile(t *testing.T) {
	t.Parallel()
	cfg, _ := writeConfig(t, "# nothing yet\n")
	s, err := config.LoadFile(cfg)
	require.NoError(t, err)
	assert.Equal(t, &config.Serve{Config: cfg}, s)
	_, err = config.LoadFile(filepath.Join(t.TempDir(), "nope.yaml"))
	require.ErrorIs(t, err, os.ErrNotExist)
	_, err = config.LoadFile(writeFileOf(t, "list.yaml", "- a\n"))
	require.ErrorContains(t, err, "want a mapping of settings")
	_, err = config.LoadFile(writeFileOf(t, "bad.yaml", "a: [\n"))
	require.Error(t, err)
}

func writeFileOf(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

func TestValidateReportsEveryProblem(t *testing.T) {
	t.Parallel()
	s := &config.Serve{
		Roles:           []string{"admin"},
		Ledger:          "redis://x",
		LedgerRetention: -time.Hour,
		HookTimeout:     -time.Second,
		Upstreams: []upstream.Settings{
			{Name: "a.b", Command: "x"},
			{Name: "ok", URL: "ftp://x"},
			{Name: "ok", Command: "x", URL: "http://x"},
			{Name: "none"},
		},
	}
	err := s.Validate()
	got := problems(t, err)
	assert.Equal(t, []string{
		"roles: roles are given without a subject (as)",
		`ledger: want memory, sqlite:PATH or postgres://..., got "redis://x"`,
		"ledger_retention: negative duration -1h0m0s",
		"hook_timeout: negative duration -1s",
		"upstreams[0] (a.b): name must match ^[A-Za-z0-9_-]{1,64}$",
		"upstreams[1] (ok): url must be http:// or https://",
		"upstreams[2] (ok): name is used twice",
		"upstreams[2] (ok): give either command or url, not both",
		"upstreams[3] (none): give a command or a url",
	}, got)
}

func TestFlagErrors(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--upstream", "noequals"},
		{"--upstream", "=cmd"},
		{"--hook-timeout", "soon"},
		{"--bogus"},
		{"stray"},
		{"--role", "x"}, // roles without --as
	} {
		_, err := config.LoadServe(args, io.Discard)
		assert.Error(t, err, "%v", args)
	}
	_, err := config.LoadServe([]string{"-h"}, io.Discard)
	assert.True(t, errors.Is(err, flag.ErrHelp))
}

func TestUsageListsEveryFlag(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	_, _ = config.LoadServe([]string{"-h"}, &b)
	for _, f := range []string{"-config FILE", "-registry FILE", "-policy DIR", "-stdio", "-http ADDR", "-as SUBJECT", "-role ROLE",
		"-tokens FILE", "-upstream NAME=COMMAND", "-ledger STORE", "-audit FILE", "-watch", "-no-watch"} {
		assert.Contains(t, b.String(), "  "+f+"\n")
	}
	assert.NotContains(t, b.String(), "panic")
}

func TestArgv(t *testing.T) {
	t.Parallel()
	assert.Equal(t, []string{"npx", "-y", "srv"}, upstream.Settings{Command: " npx  -y srv "}.Argv())
	assert.Equal(t, []string{"uvx", "a b"}, upstream.Settings{Command: "uvx", Args: []string{"a b"}}.Argv())
}

// TestHTTPLimits: the HTTP limits of docs/contract.md §11 come from flags and from the
// file (flags win), and negative values are refused.
func TestHTTPLimits(t *testing.T) {
	t.Parallel()
	cfg, _ := writeConfig(t, "sessionTimeout: 5m\nmaxSessions: 7\nreadTimeout: 3s\nidleTimeout: 1m\nmaxConnections: 99\nallowedOrigins: [https://a.example]\nadminRole: ops\nmetricsAddr: 127.0.0.1:9090\n")
	s, err := config.LoadServe([]string{"--config", cfg, "--max-sessions", "8", "--allowed-origin", "https://b.example", "--allowed-origin", "http://c.example:8080"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 5*time.Minute, s.HTTPServer.SessionTimeout)
	assert.Equal(t, 8, s.HTTPServer.MaxSessions)
	assert.Equal(t, 3*time.Second, s.HTTPServer.ReadTimeout)
	assert.Equal(t, time.Minute, s.HTTPServer.IdleTimeout)
	assert.Equal(t, 99, s.HTTPServer.MaxConnections)
	assert.Equal(t, []string{"https://b.example", "http://c.example:8080"}, s.HTTPServer.AllowedOrigins)
	assert.Equal(t, "ops", s.HTTPServer.AdminRole)
	assert.Equal(t, "127.0.0.1:9090", s.HTTPServer.MetricsAddr)

	_, err = config.LoadServe([]string{"--max-connections", "-1"}, io.Discard)
	require.Error(t, err)
	bad, _ := writeConfig(t, "maxSessions: -1\nreadTimeout: -1s\n")
	_, err = config.LoadServe([]string{"--config", bad}, io.Discard)
	var ce *config.Error
	require.ErrorAs(t, err, &ce)
	assert.Len(t, ce.Problems, 2)
	bad, _ = writeConfig(t, "allowedOrigins: [evil]\n")
	_, err = config.LoadServe([]string{"--config", bad}, io.Discard)
	require.ErrorAs(t, err, &ce)
	assert.Len(t, ce.Problems, 1)
}

// TestUpstreamSectionAndTrustKinds: an upstream's section is a non-empty
// string and trust_annotations a boolean (docs/contract.md §15).
func TestUpstreamSectionAndTrustKinds(t *testing.T) {
	t.Parallel()
	cfg, _ := writeConfig(t, "upstreams:\n  - {name: a, command: x, import: true, section: \"\", trust_annotations: \"yes\"}\n")
	_, err := config.LoadFile(cfg)
	got := problems(t, err)
	assert.Equal(t, []string{
		"line 2: upstreams[0]: section: wrong kind of value",
		"line 2: upstreams[0]: trust_annotations: wrong kind of value",
	}, got)
}

// TestZeroIsNotTheDefault: a duration or count set to zero (or less) is an
// error that names the flag or the file's key and line, never a silent
// default (--eval-timeout 0 once meant 250ms).
func TestZeroIsNotTheDefault(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--eval-timeout", "0"}, {"--hook-timeout", "0s"}, {"--session-timeout", "-1m"},
		{"--ledger-retention", "0"}, {"--max-sessions", "0"}, {"--max-connections", "0"},
	} {
		var stderr strings.Builder
		_, err := config.LoadServe(args, &stderr)
		require.Error(t, err, "%v", args)
		assert.Contains(t, err.Error(), "flag -"+strings.TrimPrefix(args[0], "--"), "the error names the flag: %v", err)
	}
	cfg, _ := writeConfig(t, "evalTimeout: 0s\nmaxSessions: 0\n")
	_, err := config.LoadServe([]string{"--config", cfg}, io.Discard)
	got := problems(t, err)
	assert.Equal(t, []string{
		"line 1: evalTimeout: want a positive duration such as 250ms",
		"line 2: maxSessions: want a whole number, 1 or more",
	}, got)
}

// TestFlagErrorsNameTheFlag: a setting given as a flag is named as the flag
// in a validation error, one from the file by its key and line.
func TestFlagErrorsNameTheFlag(t *testing.T) {
	t.Parallel()
	for args, want := range map[string]string{
		"--ledger foo":                 `config: --ledger: want memory`,
		"--role x":                     `config: --role: roles are given without a subject`,
		"--allowed-origin evil":        `config: --allowed-origin: `,
		"--list-fallback x":            `config: --list-fallback: want base or none`,
		"--upstream bad/name=cmd":      `config: --upstream: name must match`,
		"--ledger-retention 1h --as a": ``,
	} {
		_, err := config.LoadServe(strings.Fields(args), io.Discard)
		if want == "" {
			require.NoError(t, err, args)
			continue
		}
		require.ErrorContains(t, err, want, args)
	}
	cfg, _ := writeConfig(t, "ledger: foo\n")
	_, err := config.LoadServe([]string{"--config", cfg}, io.Discard)
	require.ErrorContains(t, err, `ledger: want memory`)
	require.NotContains(t, err.Error(), "--ledger")
}
