package readmetest

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// The documentation is README.md and the pages under docs/. docs/contract.md
// is the contract: its own tests (contract_test.go) read it; the snippet
// tests read the others, which are written for people to follow.

// docPages are the Markdown pages of the documentation, relative to root:
// README.md first, then docs/*.md in name order.
func docPages(t *testing.T, root string) []string {
	t.Helper()
	pages := []string{"README.md"}
	found, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	for _, f := range found {
		rel, err := filepath.Rel(root, f)
		require.NoError(t, err)
		pages = append(pages, filepath.ToSlash(rel))
	}
	slices.Sort(pages[1:])
	require.Greater(t, len(pages), 1, "no page under docs/")
	return pages
}

// guidePages are docPages without the contract.
func guidePages(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	for _, p := range docPages(t, root) {
		if p != "docs/contract.md" {
			out = append(out, p)
		}
	}
	return out
}

// pageBlocks parses one page, each block knowing its page.
func pageBlocks(t *testing.T, root, rel string) []block {
	t.Helper()
	md, err := os.ReadFile(filepath.Join(root, rel))
	require.NoError(t, err)
	blocks, err := parseBlocks(string(md))
	require.NoError(t, err, rel)
	for i := range blocks {
		blocks[i].file = rel
	}
	return blocks
}

// guideBlocks are the blocks of every guide page, in page order.
func guideBlocks(t *testing.T, root string) []block {
	t.Helper()
	var out []block
	for _, p := range guidePages(t, root) {
		out = append(out, pageBlocks(t, root, p)...)
	}
	return out
}

// readPage reads one page of the checkout.
func readPage(t *testing.T, root, rel string) string {
	t.Helper()
	md, err := os.ReadFile(filepath.Join(root, rel))
	require.NoError(t, err)
	return string(md)
}
