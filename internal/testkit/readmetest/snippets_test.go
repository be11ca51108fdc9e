package readmetest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// placeholder is the line of a go-wrap template that the snippet replaces.
const placeholder = "{{snippet}}"

// goFile turns a ```go block into a Go source file: a block that starts with
// a package clause is a file already; any other block needs a
//
//	<!-- readme:go-wrap
//	package main
//	import (...)
//	func main() {
//		{{snippet}}
//	}
//	-->
//
// comment right before its fence, a whole file with a {{snippet}} line.
func goFile(b block) (string, error) {
	if regexp.MustCompile(`(?m)^package \w+`).MatchString(b.body) {
		return b.body, nil
	}
	if b.directive != "go-wrap" {
		return "", fmt.Errorf("%s: this ```go block is not a whole file (no package clause): put a <!-- readme:go-wrap ... --> comment with the file around it, with a %s line, right before the fence", b.where(), placeholder)
	}
	if !strings.Contains(b.directiveText, placeholder) {
		return "", fmt.Errorf("%s: the go-wrap comment has no %s line", b.where(), placeholder)
	}
	return strings.Replace(b.directiveText, placeholder, b.body, 1), nil
}

// buildSnippets writes each Go block into its own package of a scratch
// module that requires toolgate from root (replace), and runs go build and
// go vet over them. The error names the README line of the block that
// failed (README.md, or the docs page the block is on).
func buildSnippets(ctx context.Context, root string, blocks []block, scratch string) error {
	dir := scratch
	// With more than one package, go build compiles and discards: a second
	// package keeps a lone main snippet from being linked into the module.
	if err := os.MkdirAll(filepath.Join(dir, "zz"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "zz", "zz.go"), []byte("package zz\n"), 0o644); err != nil {
		return err
	}
	goMod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return err
	}
	// The scratch module takes toolgate's own requirements, so that the
	// snippets build with exactly the versions toolgate is tested with and
	// go.sum (copied) has every hash: no network.
	mod := regexp.MustCompile(`(?m)^module .*$`).ReplaceAllString(string(goMod), "module readmesnippets")
	mod += fmt.Sprintf("\nrequire github.com/toolgate/toolgate v0.0.0\n\nreplace github.com/toolgate/toolgate => %s\n", root)
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(mod), 0o644); err != nil {
		return err
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644); err != nil {
		return err
	}
	// where[pkg] is the block's page and fence, and the line of snippet.go
	// that holds the block's first line, to point errors at page lines.
	type origin struct {
		page                string
		fence, first, lines int
	}
	where := map[string]origin{}
	for i, b := range blocks {
		src, err := goFile(b)
		if err != nil {
			return err
		}
		pkg := fmt.Sprintf("block%d", i)
		first := 1
		if i := strings.Index(src, b.body); i >= 0 {
			first = strings.Count(src[:i], "\n") + 1
		}
		where[pkg] = origin{b.pageName(), b.line, first, strings.Count(b.body, "\n")}
		if err := os.MkdirAll(filepath.Join(dir, pkg), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, pkg, "snippet.go"), []byte(src), 0o644); err != nil {
			return err
		}
	}
	for _, args := range [][]string{{"build", "./..."}, {"vet", "./..."}} {
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir = dir
		// No module download: everything the snippets may import is a
		// requirement of toolgate, already in the module cache. Read-only:
		// an import no requirement provides fails at loading, without
		// walking the module graph for a module that might (-mod=mod did,
		// and needed go.mod files go build never downloads).
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=readonly", "GOPROXY=off", "GOWORK=off")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			// Point at the page: block<I>/snippet.go:L is a line of the
			// I-th block, or of its wrap.
			text := regexp.MustCompile(`block(\d+)/snippet\.go:(\d+)`).ReplaceAllStringFunc(out.String(), func(s string) string {
				var i, l int
				fmt.Sscanf(s, "block%d/snippet.go:%d", &i, &l)
				o := where[fmt.Sprintf("block%d", i)]
				if l < o.first || l >= o.first+o.lines {
					return fmt.Sprintf("%s (the go-wrap comment of the block at %s:%d)", s, o.page, o.fence)
				}
				return fmt.Sprintf("%s:%d", o.page, o.fence+1+l-o.first)
			})
			return fmt.Errorf("go %s of the documentation's Go snippets: %v\n%s", strings.Join(args, " "), err, text)
		}
	}
	return nil
}

// TestReadmeGoSnippets compiles and vets every ```go block of the README
// and of the pages under docs/.
func TestReadmeGoSnippets(t *testing.T) {
	root := checkout(t)
	blocks := guideBlocks(t, root)
	var goBlocks []block
	for _, b := range blocks {
		if b.lang == "go" && b.directive != "skip" {
			goBlocks = append(goBlocks, b)
		}
	}
	require.NotEmpty(t, goBlocks, "the documentation has no Go snippet: are these the right files?")
	require.NoError(t, buildSnippets(t.Context(), root, goBlocks, t.TempDir()))
}

// TestBuildSnippetsFails: the check bites. A snippet that does not compile,
// one that vet refuses, and a fragment without its wrap comment each fail,
// naming the README line.
func TestBuildSnippetsFails(t *testing.T) {
	root := checkout(t)
	wrap := "package main\n\nimport \"github.com/toolgate/toolgate/toolcall\"\n\nfunc main() {\n" + placeholder + "\n}\n"
	for name, c := range map[string]struct {
		md   string
		want string
	}{
		"unused variable": {"<!-- readme:go-wrap\n" + wrap + "-->\n```go\nc := toolcall.Caller{}\n```\n", "declared and not used"},
		"vet":             {"```go\npackage main\n\nimport \"fmt\"\n\nfunc main() { fmt.Printf(\"%d\", \"x\") }\n```\n", "go vet"},
		"no wrap":         {"text\n\n```go\nx := 1\n```\n", "README.md:3: this ```go block is not a whole file"},
		"unknown package": {"```go\npackage main\n\nimport _ \"github.com/toolgate/toolgate/nosuch\"\n\nfunc main() {}\n```\n", "README.md:4"},
	} {
		t.Run(name, func(t *testing.T) {
			blocks, err := parseBlocks(c.md)
			require.NoError(t, err)
			err = buildSnippets(t.Context(), root, blocks, t.TempDir())
			require.Error(t, err)
			require.Contains(t, err.Error(), c.want)
		})
	}
	// An error points at the page and line of a docs page's block.
	blocks, err := parseBlocks("text\n\n```go\npackage main\n\nfunc main() { undefinedThing() }\n```\n")
	require.NoError(t, err)
	blocks[0].file = "docs/embedding.md"
	err = buildSnippets(t.Context(), root, blocks, t.TempDir())
	require.Error(t, err)
	require.Contains(t, err.Error(), "docs/embedding.md:6")
	// And the same machinery accepts a good wrapped fragment.
	blocks, err = parseBlocks("<!-- readme:go-wrap\n" + wrap + "-->\n\n```go\n_ = toolcall.Caller{Subject: \"a\"}\n```\n")
	require.NoError(t, err)
	require.NoError(t, buildSnippets(t.Context(), root, blocks, t.TempDir()))
}

// checkout is the root of the toolgate checkout under test.
func checkout(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(root, "go.mod"))
	require.NoError(t, err)
	return root
}
