// Package suggest finds the name a misspelt one most likely meant, for
// "did you mean" hints in toolgate's messages.
package suggest

import "strings"

// Closest returns the candidate closest to s, compared case-insensitively
// and ignoring '_' and '-' (tokenUrl meant token_url), within an edit
// distance of 2, or 3 for names of 8 characters or more (policies meant
// policy); "" when none is that close or s is itself a candidate. Of
// candidates equally close, the first wins.
func Closest(s string, candidates []string) string {
	key := fold(s)
	limit := 2
	if len(key) >= 8 {
		limit = 3
	}
	best, bestD := "", limit+1
	for _, c := range candidates {
		if c == s {
			return ""
		}
		if d := Distance(key, fold(c)); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

func fold(s string) string {
	return strings.NewReplacer("_", "", "-", "").Replace(strings.ToLower(s))
}

// Distance is the Levenshtein distance of a and b, in runes; huge for
// names over 64 runes (not worth a suggestion).
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	if len(ra) > 64 || len(rb) > 64 {
		return 1 << 30
	}
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
