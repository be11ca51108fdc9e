// Command testprogress reads `go test -json` on its standard input and
// prints a line per package as each finishes, and the output of what
// failed (package testprogress). It exits 1 when a package failed, 0
// otherwise; scripts/test keeps go test's own exit code too.
package main

import (
	"fmt"
	"os"

	"github.com/toolgate/toolgate/internal/testkit/testprogress"
)

func main() {
	s, err := testprogress.Format(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testprogress:", err)
		os.Exit(2)
	}
	if s.Failed > 0 {
		os.Exit(1)
	}
}
