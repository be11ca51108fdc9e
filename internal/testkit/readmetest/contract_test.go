package readmetest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// contractSections is how many numbered sections docs/contract.md has: code
// cites them as "docs/contract.md §N".
const contractSections = 20

// checkContract checks a contract page against the checkout at root: its
// "## N. Title" sections are numbered 1 to contractSections in order, each
// has a **Pinned by** list, and each list line
//
//   - `path/to/file_test.go`: `TestA`, `FuzzB`, `ExampleC`
//
// names a file that exists and functions it declares; a cited
// `.../testdata/...` file must exist. Every problem is returned.
func checkContract(root, page string) error {
	var errs []error
	heading := regexp.MustCompile(`^## (\d+)\. \S`)
	cite := regexp.MustCompile("^- `([^`]+)`:(.*)$")
	name := regexp.MustCompile("`((?:Test|Fuzz|Example)\\w*)`")
	fixture := regexp.MustCompile("`([\\w./-]+/testdata/[\\w./-]+)`")
	sections, pinned := 0, map[int]bool{}
	for i, l := range strings.Split(page, "\n") {
		where := fmt.Sprintf("docs/contract.md:%d", i+1)
		if m := heading.FindStringSubmatch(l); m != nil {
			n, _ := strconv.Atoi(m[1])
			sections++
			if n != sections {
				errs = append(errs, fmt.Errorf("%s: section %d where §%d was due", where, n, sections))
			}
			continue
		}
		if strings.TrimSpace(l) == "**Pinned by**" {
			pinned[sections] = true
			continue
		}
		for _, f := range fixture.FindAllStringSubmatch(l, -1) {
			if _, err := os.Stat(filepath.Join(root, f[1])); err != nil {
				errs = append(errs, fmt.Errorf("%s: cites %s, which does not exist", where, f[1]))
			}
		}
		m := cite.FindStringSubmatch(l)
		if m == nil || !strings.HasSuffix(m[1], ".go") {
			continue
		}
		src, err := os.ReadFile(filepath.Join(root, m[1]))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: cites %s: %v", where, m[1], err))
			continue
		}
		names := name.FindAllStringSubmatch(m[2], -1)
		if len(names) == 0 {
			errs = append(errs, fmt.Errorf("%s: cites %s without a test name", where, m[1]))
		}
		for _, n := range names {
			if !regexp.MustCompile(`(?m)^func ` + n[1] + `\(`).Match(src) {
				errs = append(errs, fmt.Errorf("%s: %s declares no %s", where, m[1], n[1]))
			}
		}
	}
	if sections != contractSections {
		errs = append(errs, fmt.Errorf("docs/contract.md has %d numbered sections, want %d", sections, contractSections))
	}
	for n := 1; n <= sections; n++ {
		if !pinned[n] {
			errs = append(errs, fmt.Errorf("docs/contract.md §%d has no **Pinned by** list", n))
		}
	}
	return errors.Join(errs...)
}

// TestContractCitations: docs/contract.md cites tests that exist.
func TestContractCitations(t *testing.T) {
	root := checkout(t)
	page, err := os.ReadFile(filepath.Join(root, "docs", "contract.md"))
	require.NoError(t, err)
	require.NoError(t, checkContract(root, string(page)))
}

// TestCheckContractFails: a renamed test, a missing file or fixture, a gap
// in the numbering and a section without tests are each reported.
func TestCheckContractFails(t *testing.T) {
	root := checkout(t)
	var page strings.Builder
	for n := 1; n <= contractSections; n++ {
		fmt.Fprintf(&page, "## %d. S\n\n**Pinned by**\n\n- `internal/testkit/readmetest/contract_test.go`: `TestContractCitations`\n\n", n)
	}
	require.NoError(t, checkContract(root, page.String()), "the well-formed page")
	for name, c := range map[string]struct{ old, new, want string }{
		"renamed test": {"`TestContractCitations`\n\n## 3.", "`TestNoSuchTest`\n\n## 3.", "declares no TestNoSuchTest"},
		"missing file": {"`internal/testkit/readmetest/contract_test.go`: `TestContractCitations`\n\n## 5.", "`internal/testkit/readmetest/gone_test.go`: `TestX`\n\n## 5.", "gone_test.go"},
		"no test name": {"`TestContractCitations`\n\n## 6.", "the whole file\n\n## 6.", "without a test name"},
		"fixture":      {"## 7. S\n", "## 7. S\n\n`mcpadapter/testdata/conformance/no-such.txt`\n", "no-such.txt, which does not exist"},
		"numbering":    {"## 9. S", "## 10. S", "section 10 where §9 was due"},
		"not pinned":   {"## 12. S\n\n**Pinned by**", "## 12. S\n\nnothing", "§12 has no **Pinned by**"},
		"missing §20":  {"## 20. S", "### 20. S", "has 19 numbered sections"},
	} {
		t.Run(name, func(t *testing.T) {
			bad := strings.Replace(page.String(), c.old, c.new, 1)
			require.NotEqual(t, page.String(), bad, "the case changes nothing")
			err := checkContract(root, bad)
			require.Error(t, err)
			require.Contains(t, err.Error(), c.want)
		})
	}
}
