package readmetest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestContractNamesEveryServedAnswer: each "Error: ..." answer a
// conformance fixture pins is one docs/contract.md states (with <name>,
// <arg> and <type> for the parts that vary), and each such answer the
// contract states is pinned by some fixture.
func TestContractNamesEveryServedAnswer(t *testing.T) {
	root := checkout(t)
	contract, err := os.ReadFile(filepath.Join(root, "docs", "contract.md"))
	require.NoError(t, err)
	type pattern struct {
		text string
		re   *regexp.Regexp
		used bool
	}
	var patterns []*pattern
	for _, m := range regexp.MustCompile("`(Error: [^`]*)`").FindAllStringSubmatch(string(contract), -1) {
		re := regexp.QuoteMeta(m[1])
		re = regexp.MustCompile(`<[a-z]+>`).ReplaceAllString(re, `.+`)
		patterns = append(patterns, &pattern{text: m[1], re: regexp.MustCompile("^" + re + "$")})
	}
	require.NotEmpty(t, patterns)

	files, err := filepath.Glob(filepath.Join(root, "mcpadapter", "testdata", "conformance", "*.txt"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	served := 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		_, resp, ok := strings.Cut(string(src), "-- response --\n")
		if !ok {
			continue
		}
		resp, _, _ = strings.Cut(resp, "\n-- ")
		var r struct {
			Result struct {
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
				IsError bool `json:"isError"`
			} `json:"result"`
		}
		require.NoError(t, json.Unmarshal([]byte(resp), &r), f)
		if !r.Result.IsError || len(r.Result.Content) != 1 || !strings.HasPrefix(r.Result.Content[0].Text, "Error: ") {
			continue
		}
		served++
		text := r.Result.Content[0].Text
		found := false
		for _, p := range patterns {
			if p.re.MatchString(text) {
				p.used, found = true, true
			}
		}
		require.True(t, found, "%s answers %q, which docs/contract.md does not state", filepath.Base(f), text)
	}
	require.NotZero(t, served)
	for _, p := range patterns {
		require.True(t, p.used, "docs/contract.md states the answer %q, which no conformance fixture pins", p.text)
	}
}
