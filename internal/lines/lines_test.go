package lines_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/lines"
)

func TestWriterWritesLines(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	w := lines.New(&b)
	w.Line("%s: %d", "a", 1)
	w.Line("plain")
	w.Indented("x\ny", "  ")
	require.NoError(t, w.Err())
	require.Equal(t, "a: 1\nplain\n  x\n  y\n", b.String())
}

// failAfter accepts n writes, then fails every one.
type failAfter struct {
	n      int
	writes []string
}

var errFull = errors.New("disk full")

func (f *failAfter) Write(p []byte) (int, error) {
	f.writes = append(f.writes, string(p))
	if len(f.writes) > f.n {
		return 0, errFull
	}
	return len(p), nil
}

// TestWriterKeepsTheFirstError: after a write fails, nothing more is
// written and Err is that first failure.
func TestWriterKeepsTheFirstError(t *testing.T) {
	t.Parallel()
	f := &failAfter{n: 1}
	w := lines.New(f)
	w.Line("one")
	w.Line("two")
	w.Line("three")
	w.Indented("four", "  ")
	require.ErrorIs(t, w.Err(), errFull)
	require.Equal(t, []string{"one\n", "two\n"}, f.writes)
}
