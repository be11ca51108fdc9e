// Command testprogress reads `go test -json` on its standard input and
// prints a line per package as each finishes, and the output of what
// failed (package testprogress); at the end each skipped test with its
// reason and the five slowest packages with their times. It exits 1 when
// a package failed, 0 otherwise; scripts/test keeps go test's own exit
// code too.
package main

import (
	"fmt"
	"os"

	"github.com/toolgate/toolgate/internal/testkit/testprogress"
)

func main() {
	s, err := testprogress.FormatWith(os.Stdin, os.Stdout, testprogress.Options{Slowest: 5, Skips: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, "testprogress:", err)
		os.Exit(2)
	}
	if s.Failed > 0 {
		os.Exit(1)
	}
}
