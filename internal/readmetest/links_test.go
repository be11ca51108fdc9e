package readmetest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"
)

// slug is the anchor GitHub gives a heading: lower case, punctuation
// dropped, spaces as hyphens.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors are the heading anchors of a Markdown text (code blocks aside).
func anchors(md string) map[string]bool {
	out := map[string]bool{}
	inCode := false
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			inCode = !inCode
		}
		if !inCode && strings.HasPrefix(l, "#") {
			out[slug(strings.TrimLeft(l, "#"))] = true
		}
	}
	return out
}

// checkLinks checks the relative links of the Markdown file rel (relative
// to root): each target exists in the checkout, and an #anchor names a
// heading of its Markdown target. No link leaves the tree.
func checkLinks(root, rel string) error {
	md, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		return err
	}
	var errs []error
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, m := range link.FindAllStringSubmatch(string(md), -1) {
		target := m[1]
		if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
			continue
		}
		path, anchor, _ := strings.Cut(target, "#")
		file := rel
		if path != "" {
			file = filepath.Join(filepath.Dir(rel), path)
			if strings.HasPrefix(filepath.Clean(file), "..") {
				errs = append(errs, fmt.Errorf("%s: link %s points outside the tree", rel, target))
				continue
			}
			if _, err := os.Stat(filepath.Join(root, file)); err != nil {
				errs = append(errs, fmt.Errorf("%s: link %s: %v", rel, target, err))
				continue
			}
		}
		if anchor != "" && strings.HasSuffix(file, ".md") {
			text, err := os.ReadFile(filepath.Join(root, file))
			if err == nil && !anchors(string(text))[anchor] {
				errs = append(errs, fmt.Errorf("%s: link %s: %s has no heading #%s", rel, target, file, anchor))
			}
		}
	}
	return errors.Join(errs...)
}

// TestReadmeLinks: the README's and the contract page's relative links
// lead somewhere in the checkout.
func TestReadmeLinks(t *testing.T) {
	root := checkout(t)
	for _, f := range []string{"README.md", "docs/contract.md"} {
		require.NoError(t, checkLinks(root, f))
	}
}

// TestCheckLinksFails: a link out of the tree, to a missing file and to a
// missing heading are each reported.
func TestCheckLinksFails(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "a.md"), []byte("## 5. A tools/call, step by step\n"), 0o644))
	good := "[x](a.md#5-a-toolscall-step-by-step) [y](#top)\n\n# Top\n"
	require.NoError(t, os.WriteFile(filepath.Join(root, "R.md"), []byte(good), 0o644))
	require.NoError(t, checkLinks(root, "R.md"))
	for _, c := range []struct{ md, want string }{
		{"[s](../shared/SPEC.md)", "outside the tree"},
		{"[s](b.md)", "b.md"},
		{"[s](a.md#6-x)", "has no heading #6-x"},
		{"[s](#nowhere)", "has no heading #nowhere"},
	} {
		require.NoError(t, os.WriteFile(filepath.Join(root, "R.md"), []byte(c.md), 0o644))
		err := checkLinks(root, "R.md")
		require.Error(t, err, c.md)
		require.Contains(t, err.Error(), c.want)
	}
}
