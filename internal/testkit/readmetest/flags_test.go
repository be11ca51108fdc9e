package readmetest

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/config"
)

var (
	flagToken     = regexp.MustCompile(`--([a-z][a-z-]*)`)
	synopsisToken = regexp.MustCompile(`(?:^|[\s\[|])--?([a-z][a-z-]*)`)
)

// flagsIn are the --flags named in text, sorted, without duplicates.
func flagsIn(text string) []string { return tokens(flagToken, text) }

// synopsisFlags are the flags of a command synopsis, where a one-letter
// flag may be written -v.
func synopsisFlags(text string) []string { return tokens(synopsisToken, text) }

func tokens(re *regexp.Regexp, text string) []string {
	var out []string
	for _, m := range re.FindAllStringSubmatch(text, -1) {
		out = append(out, m[1])
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// usageFlags are the flags a usage text (Go's flag package) lists.
func usageFlags(usage string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`(?m)^  -([a-z][a-z-]*)`).FindAllStringSubmatch(usage, -1) {
		out = append(out, m[1])
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// between is the text of md from the first line starting with from up to
// the next line starting with one of until (or the end).
func between(md, from string, until ...string) string {
	i := strings.Index(md, "\n"+from)
	if i < 0 {
		return ""
	}
	rest := md[i+1:]
	end := len(rest)
	for _, u := range until {
		if j := strings.Index(rest[1:], "\n"+u); j >= 0 && j+1 < end {
			end = j + 1
		}
	}
	return rest[:end]
}

// TestReadmeFlagsAreTheBinarys: the flags docs/cli.md and docs/contract.md
// document for each command are exactly the flags the binary has, and the
// settings-file keys docs/cli.md lists are the ones `--config` reads.
func TestReadmeFlagsAreTheBinarys(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	root := checkout(t)
	readme, err := os.ReadFile(filepath.Join(root, "docs", "cli.md"))
	require.NoError(t, err)
	contract, err := os.ReadFile(filepath.Join(root, "docs", "contract.md"))
	require.NoError(t, err)
	md, cp := string(readme), string(contract)

	var usage strings.Builder
	_, _ = config.LoadServe([]string{"-h"}, &usage)
	serve := usageFlags(usage.String())
	require.NotEmpty(t, serve)
	require.Equal(t, serve, flagsIn(between(md, "## `toolgate serve`", "### ", "## ")),
		"docs/cli.md, the `toolgate serve` table: its flags and `toolgate serve -h`'s")
	require.Equal(t, serve, flagsIn(between(cp, "## 8. ", "The state directory")+between(cp, "## 12. ", "- **Accepted**")),
		"docs/contract.md, the flag tables of §8 and §12: their flags and `toolgate serve -h`'s")

	ctx, cancel := context.WithTimeout(t.Context(), tourTimeout)
	defer cancel()
	bin, err := goBuild(ctx, root, "toolgate", "./cmd/toolgate")
	require.NoError(t, err)
	for _, cmd := range []string{"test", "check", "explain", "approvals"} {
		has := commandFlags(ctx, t, bin, cmd)
		heading := regexp.MustCompile("(?m)^## `toolgate " + cmd + " ([^`]*)`").FindStringSubmatch(md)
		require.NotNil(t, heading, "docs/cli.md has no ## `toolgate %s ...` heading", cmd)
		require.Equal(t, has, synopsisFlags(heading[1]), "docs/cli.md, the `toolgate %s` heading: its flags and `toolgate %s -h`'s", cmd, cmd)
		if line := regexp.MustCompile("(?m)^- `toolgate " + cmd + " (\\[[^`]*)`").FindStringSubmatch(cp); line != nil || cmd != "approvals" {
			require.NotNil(t, line, "docs/contract.md §8 has no - `toolgate %s [...]` line", cmd)
			require.Equal(t, has, synopsisFlags(line[1]), "docs/contract.md, the `toolgate %s` line: its flags and `toolgate %s -h`'s", cmd, cmd)
		}
	}

	// Settings-file keys: docs/cli.md's list, against what the file reader
	// accepts (each key read alone) and what it says it knows.
	row := regexp.MustCompile("(?m)^\\| `--config FILE` \\| a YAML file with any of the settings below \\(([^)]*)\\)").FindStringSubmatch(md)
	require.NotNil(t, row, "docs/cli.md: the --config row lists no keys")
	var keys []string
	for _, m := range regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(row[1], -1) {
		keys = append(keys, m[1])
	}
	for _, k := range keys {
		path := filepath.Join(t.TempDir(), "toolgate.yaml")
		require.NoError(t, os.WriteFile(path, []byte(k+": null\n"), 0o644))
		_, err := config.LoadServe([]string{"--config", path}, io.Discard)
		if err != nil {
			require.NotContains(t, err.Error(), "unknown key", "docs/cli.md lists the settings key %q", k)
		}
	}
	path := filepath.Join(t.TempDir(), "toolgate.yaml")
	require.NoError(t, os.WriteFile(path, []byte("no-such-key: 1\n"), 0o644))
	_, err = config.LoadServe([]string{"--config", path}, io.Discard)
	require.Error(t, err)
	known := regexp.MustCompile(`\(known: ([^)]*)\)`).FindStringSubmatch(err.Error())
	require.NotNil(t, known, "the unknown-key error lists no known keys: %v", err)
	for _, k := range strings.Split(known[1], ", ") {
		require.Contains(t, keys, k, "the settings key %q is not in docs/cli.md's --config row", k)
		require.Contains(t, between(cp, "## 8. ", "The state directory"), "`"+k+"`", "the settings key %q is not in docs/contract.md §8", k)
	}
}

// commandFlags are the flags `toolgate CMD -h` lists.
func commandFlags(ctx context.Context, t *testing.T, bin, cmd string) []string {
	t.Helper()
	c := exec.CommandContext(ctx, bin, cmd, "-h")
	c.Env = append(os.Environ(), "XDG_STATE_HOME="+t.TempDir())
	out, _ := c.CombinedOutput() // -h exits non-zero
	flags := usageFlags(string(out))
	require.NotEmpty(t, flags, "toolgate %s -h lists no flag:\n%s", cmd, out)
	return flags
}
