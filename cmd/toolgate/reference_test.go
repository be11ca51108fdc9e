package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/config"
)

// The generated pages of the documentation. `go generate ./cmd/toolgate`
// (see main.go) rewrites them; these tests fail when a checked-in page is
// not what the binary generates.

// cliReferencePath is the flag reference, relative to this package.
const cliReferencePath = "../../docs/cli-reference.md"

// cliReference renders every command's `-h` output, as the binary prints
// it, into one Markdown page.
func cliReference(t *testing.T) []byte {
	t.Helper()
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	var b bytes.Buffer
	b.WriteString("# Flag reference\n\n")
	b.WriteString("<!-- Generated from the binary's flag sets by `go generate ./cmd/toolgate`\n")
	b.WriteString("     (cmd/toolgate/reference_test.go); do not edit. -->\n\n")
	b.WriteString("Every command's flags, as `toolgate COMMAND -h` prints them.\n")
	b.WriteString("[Commands and flags](cli.md) says what each command does, and\n")
	b.WriteString("`toolgate serve`'s settings file; the [settings reference](settings.md)\n")
	b.WriteString("lists each of serve's settings with its config key and default.\n\n")
	var top bytes.Buffer
	run(context.Background(), &env{args: []string{"-h"}, stdout: &top, stderr: &top})
	fmt.Fprintf(&b, "```text\n%s```\n", top.String())
	for _, n := range names {
		var out bytes.Buffer
		e := &env{args: []string{n, "-h"}, stdin: strings.NewReader(""), stdout: &out, stderr: &out}
		run(context.Background(), e)
		require.NotEmpty(t, out.String(), "toolgate %s -h printed nothing", n)
		fmt.Fprintf(&b, "\n## toolgate %s\n\n%s\n\n```text\n%s```\n", n, commands[n].summary, strings.TrimRight(out.String(), "\n")+"\n")
	}
	return b.Bytes()
}

// TestCLIReference: docs/cli-reference.md is what the binary's flag sets
// generate (-update, or go generate ./cmd/toolgate, rewrites it).
func TestCLIReference(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir()) // no default may depend on the machine
	got := cliReference(t)
	for _, c := range []string{"serve", "test", "check", "explain", "build", "approvals", "pins"} {
		require.Contains(t, string(got), "\n## toolgate "+c+"\n", "the reference has no section for %s", c)
	}
	require.Contains(t, string(got), "-var-values", "the reference lists test's flags")
	checkGenerated(t, cliReferencePath, got)
}

// checkGenerated compares a generated file with the checked-in one, or
// writes it with -update.
func checkGenerated(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go generate ./cmd/toolgate to create %s", filepath.Base(path))
	require.Equal(t, string(want), string(got), "%s is not what the binary generates; run go generate ./cmd/toolgate", path)
}

// settingsReferencePath is the settings reference, relative to this package.
const settingsReferencePath = "../../docs/settings.md"

// settingsReference renders the table of serve's settings (config.Settings)
// as one Markdown page: each key, its flag, its default and what it does,
// as the flags' usage says it.
func settingsReference() []byte {
	var b bytes.Buffer
	b.WriteString("# Settings reference\n\n")
	b.WriteString("<!-- Generated from config.Settings by `go generate ./cmd/toolgate`\n")
	b.WriteString("     (cmd/toolgate/reference_test.go); do not edit. -->\n\n")
	b.WriteString("Every setting of `toolgate serve`: a key of its YAML settings file\n")
	b.WriteString("(`--config FILE`) and, for most, a flag. Flags win over the file; a path\n")
	b.WriteString("in the file is relative to the file. The file is read strictly: a key that\n")
	b.WriteString("is not below, or a value of the wrong kind, is an error naming the key and\n")
	b.WriteString("its line. Keys are snake_case; a key's former camelCase name (last column)\n")
	b.WriteString("is still read, for one release, with a warning naming the new one.\n")
	b.WriteString("[Commands and flags](cli.md) says what `serve` does; the\n")
	b.WriteString("[flag reference](cli-reference.md) lists every command's flags.\n\n")
	b.WriteString("| key | flag | default | meaning | former key |\n| --- | --- | --- | --- | --- |\n")
	cell := func(s string) string { return strings.ReplaceAll(s, "|", "\\|") }
	for _, st := range config.Settings() {
		key, flagCol, old := "", "", ""
		if st.Key != "" {
			key = "`" + st.Key + "`"
		}
		if st.Old != "" {
			old = "`" + st.Old + "`"
		}
		if st.Flag != "" {
			arg, _ := flag.UnquoteUsage(&flag.Flag{Name: st.Flag, Usage: st.Usage, Value: new(repeated)})
			flagCol = "`--" + st.Flag
			if arg != "" && arg != "value" {
				flagCol += " " + arg
			}
			flagCol += "`"
			if strings.Contains(st.Notes, "repeatable") {
				flagCol += " (repeatable)"
			}
		}
		def := "none"
		switch {
		case st.Default == "" && st.Unset == "" && st.Key != "" && st.Flag != "" && !strings.Contains(st.Usage, "`"):
			def = "off" // a switch
		case st.Default != "":
			def = "`" + st.Default + "`"
		case st.Unset != "":
			def = st.Unset
		}
		meaning := strings.ReplaceAll(st.Usage, "`", "")
		if keys := st.Keys(); keys != nil {
			meaning += "; keys: `" + strings.Join(keys, "`, `") + "`"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", key, cell(flagCol), cell(def), cell(meaning), old)
	}
	return b.Bytes()
}

// TestSettingsReference: docs/settings.md is what the table of settings
// generates (-update, or go generate ./cmd/toolgate, rewrites it).
func TestSettingsReference(t *testing.T) {
	checkGenerated(t, settingsReferencePath, settingsReference())
}

// policyFixturePath is the policy tests' fixture of the bundled example,
// relative to this package: data.fixtures.bundled for the tests in
// policy-tests/.
const policyFixturePath = "../../policy-tests/fixtures/bundled/data.json"

// policyFixture renders the fixture from `toolgate explain --input`: the
// rows of the bundled registry exactly as the input document shows them
// (to an admin, whom the base decision grants every row), so that the
// policy tests read the rows the server builds instead of copies.
func policyFixture(t *testing.T) []byte {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), &env{
		args:   []string{"explain", "--registry", "../../example/registry.yaml", "--policy", "../../rego", "--as", "fixture", "--role", "admin", "--input"},
		stdin:  strings.NewReader(""),
		stdout: &out, stderr: &errOut,
	})
	require.Equal(t, 0, code, "explain --input: %s", errOut.String())
	var doc struct {
		Tools json.RawMessage `json:"tools"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &doc))
	require.NotEmpty(t, doc.Tools)
	var b bytes.Buffer
	require.NoError(t, json.Indent(&b, []byte(`{"tools":`+string(doc.Tools)+`}`), "", "  "))
	b.WriteString("\n")
	return b.Bytes()
}

// TestPolicyTestFixture: the fixture the policy tests read is what
// `toolgate explain --input` prints for the bundled example today (-update,
// or go generate ./cmd/toolgate, rewrites it after a registry change).
func TestPolicyTestFixture(t *testing.T) {
	checkGenerated(t, policyFixturePath, policyFixture(t))
}
