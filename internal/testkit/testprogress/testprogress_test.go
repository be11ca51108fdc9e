package testprogress_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/testkit/testprogress"
)

// TestFormat: a line per package in the order they end, the output of a
// failed package (and of a package that does not build), other lines as
// they are, and the counts.
func TestFormat(t *testing.T) {
	t.Parallel()
	in := `{"Action":"start","Package":"m/slow"}
{"Action":"start","Package":"m/fast"}
{"Action":"output","Package":"m/slow","Test":"TestSlow","Output":"=== RUN   TestSlow\n"}
{"Action":"pass","Package":"m/fast","Test":"TestFast","Elapsed":0}
{"Action":"output","Package":"m/fast","Output":"ok  \tm/fast\t0.01s\n"}
{"Action":"pass","Package":"m/fast","Elapsed":0.01}
{"Action":"output","Package":"m/slow","Test":"TestSlow","Output":"    slow_test.go:9: want 2, got 3\n"}
{"Action":"fail","Package":"m/slow","Test":"TestSlow","Elapsed":4}
{"Action":"fail","Package":"m/slow","Elapsed":4.04}
{"Action":"skip","Package":"m/none"}
# m/broken
{"ImportPath":"m/broken [m/broken.test]","Action":"build-output","Output":"broken.go:3:1: syntax error\n"}
{"ImportPath":"m/broken [m/broken.test]","Action":"build-fail"}
{"Action":"fail","Package":"m/broken","Elapsed":0,"FailedBuild":"m/broken [m/broken.test]"}
`
	var out strings.Builder
	s, err := testprogress.Format(strings.NewReader(in), &out)
	require.NoError(t, err)
	assert.Equal(t, testprogress.Summary{Passed: 1, Failed: 2, Skipped: 1}, s)
	assert.Equal(t, `ok    m/fast (0.0s) [1 done]
FAIL  m/slow (4.0s) [2 done]
      === RUN   TestSlow
          slow_test.go:9: want 2, got 3
-     m/none (no tests) [3 done]
# m/broken
BUILD FAIL m/broken [m/broken.test]
broken.go:3:1: syntax error
FAIL  m/broken (0.0s) [4 done]
      (does not build: m/broken [m/broken.test])
1 packages passed, 2 failed, 1 without tests
`, out.String())
}

// TestFormatWith: Format's lines, then each skipped test with the reason
// it gave and the slowest packages that ran, slowest first.
func TestFormatWith(t *testing.T) {
	t.Parallel()
	in := `{"Action":"output","Package":"m/a","Test":"TestSkips","Output":"=== RUN   TestSkips\n"}
{"Action":"output","Package":"m/a","Test":"TestSkips","Output":"    a_test.go:12: needs PostgreSQL: set X\n"}
{"Action":"output","Package":"m/a","Test":"TestSkips","Output":"--- SKIP: TestSkips (0.00s)\n"}
{"Action":"skip","Package":"m/a","Test":"TestSkips","Elapsed":0}
{"Action":"pass","Package":"m/a","Elapsed":2.5}
{"Action":"pass","Package":"m/b","Elapsed":7.25}
{"Action":"skip","Package":"m/none"}
{"Action":"fail","Package":"m/c","Elapsed":4}
`
	var out strings.Builder
	s, err := testprogress.FormatWith(strings.NewReader(in), &out, testprogress.Options{Slowest: 2, Skips: true})
	require.NoError(t, err)
	assert.Equal(t, testprogress.Summary{Passed: 2, Failed: 1, Skipped: 1}, s)
	assert.Equal(t, `ok    m/a (2.5s) [1 done]
ok    m/b (7.2s) [2 done]
-     m/none (no tests) [3 done]
FAIL  m/c (4.0s) [4 done]
2 packages passed, 1 failed, 1 without tests
1 tests skipped
SKIP  m/a TestSkips: needs PostgreSQL: set X
slowest: m/b (7.2s), m/c (4.0s)
`, out.String())
}
