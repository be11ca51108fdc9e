package bundle

// CompareRevisions orders two manifest revisions as versions are ordered
// (docs/contract.md §14): each is read as runs of ASCII digits and runs of
// anything else; runs are compared in turn, two digit runs as numbers
// (leading zeros ignored), anything else byte by byte; a revision that is
// a prefix of the other is the older. So "9" < "10", "v1.9" < "v1.10",
// "2026-12-01T10:00:00Z" < "2026-12-02T09:00:00Z", and an RFC 3339 time
// or a build number orders as expected; a commit hash orders by chance.
// It returns -1, 0 or +1.
func CompareRevisions(a, b string) int {
	for a != "" && b != "" {
		ra, rb := run(a), run(b)
		if c := compareRun(a[:ra], b[:rb]); c != 0 {
			return c
		}
		a, b = a[ra:], b[rb:]
	}
	switch {
	case a == b:
		return 0
	case a == "":
		return -1
	default:
		return 1
	}
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// run is the length of the run s starts with: digits, or non-digits.
func run(s string) int {
	d := isDigit(s[0])
	i := 1
	for i < len(s) && isDigit(s[i]) == d {
		i++
	}
	return i
}

func compareRun(x, y string) int {
	if isDigit(x[0]) && isDigit(y[0]) {
		x, y = trimZeros(x), trimZeros(y)
		if len(x) != len(y) {
			if len(x) < len(y) {
				return -1
			}
			return 1
		}
	}
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

func trimZeros(s string) string {
	for len(s) > 1 && s[0] == '0' {
		s = s[1:]
	}
	return s
}
