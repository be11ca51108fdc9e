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

// TestReadmeLinks: the relative links of the README and of every page
// under docs/ (the contract included) lead somewhere in the checkout.
func TestReadmeLinks(t *testing.T) {
	root := checkout(t)
	for _, f := range docPages(t, root) {
		require.NoError(t, checkLinks(root, f))
	}
}

// mdLinks are the Markdown files a page links to, relative to root, once
// each: relative links only, anchors dropped.
func mdLinks(root, rel string) ([]string, error) {
	md, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range regexp.MustCompile(`\]\(([^)\s#]+)(?:#[^)\s]*)?\)`).FindAllStringSubmatch(string(md), -1) {
		target := m[1]
		if strings.Contains(target, "://") || !strings.HasSuffix(target, ".md") {
			continue
		}
		out = append(out, filepath.ToSlash(filepath.Join(filepath.Dir(rel), target)))
	}
	return out, nil
}

// unreachable are the pages no chain of links from start reaches.
func unreachable(root, start string, pages []string) ([]string, error) {
	seen := map[string]bool{start: true}
	queue := []string{start}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		links, err := mdLinks(root, p)
		if err != nil {
			return nil, err
		}
		for _, l := range links {
			if !seen[l] {
				seen[l] = true
				queue = append(queue, l)
			}
		}
	}
	var out []string
	for _, p := range pages {
		if !seen[p] {
			out = append(out, p)
		}
	}
	return out, nil
}

// TestDocsReachableFromReadme: every page under docs/ is reached from the
// README by following links, so a reader who starts there finds it.
func TestDocsReachableFromReadme(t *testing.T) {
	root := checkout(t)
	missing, err := unreachable(root, "README.md", docPages(t, root))
	require.NoError(t, err)
	require.Empty(t, missing, "pages under docs/ that no chain of links from README.md reaches")
}

// TestUnreachableFails: a page nothing links to is reported; one linked
// through another page is not.
func TestUnreachableFails(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "docs"), 0o755))
	for name, text := range map[string]string{
		"README.md":    "[a](docs/a.md#x) [web](https://example.com/c.md)\n",
		"docs/a.md":    "[b](b.md)\n",
		"docs/b.md":    "[back](../README.md)\n",
		"docs/lost.md": "[a](a.md)\n",
	} {
		require.NoError(t, os.WriteFile(filepath.Join(root, name), []byte(text), 0o644))
	}
	missing, err := unreachable(root, "README.md", []string{"README.md", "docs/a.md", "docs/b.md", "docs/lost.md"})
	require.NoError(t, err)
	require.Equal(t, []string{"docs/lost.md"}, missing)
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
