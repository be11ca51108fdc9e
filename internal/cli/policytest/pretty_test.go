package policytest_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/cli/policytest"
)

func TestWritePrettyDurations(t *testing.T) {
	t.Parallel()
	r := &policytest.Report{Results: []policytest.Result{{
		Package: "data.p_test", Name: "test_x", Status: policytest.StatusFail,
		Duration: 1200 * time.Microsecond, Location: policytest.Location{File: "p_test.rego", Row: 3},
	}}}
	var b strings.Builder
	if err := r.WritePretty(&b, false); err != nil {
		t.Fatal(err)
	}
	want := "p_test.rego:3:\ndata.p_test.test_x: FAIL (1.2ms)\n" + strings.Repeat("-", 80) + "\nFAIL: 1/1\n"
	if b.String() != want {
		t.Errorf("WritePretty:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestWritePrettyNoTests(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	if err := (&policytest.Report{}).WritePretty(&b, true); err != nil {
		t.Fatal(err)
	}
	if b.String() != "no tests were run\n" {
		t.Errorf("WritePretty of an empty report = %q", b.String())
	}
}

type failingWriter struct{}

var errWrite = errors.New("disk full")

func (failingWriter) Write([]byte) (int, error) { return 0, errWrite }

func TestWritePrettyWriteError(t *testing.T) {
	t.Parallel()
	r := &policytest.Report{Results: []policytest.Result{{Package: "data.p", Name: "test_x", Status: policytest.StatusPass}}}
	if err := r.WritePretty(failingWriter{}, true); !errors.Is(err, errWrite) {
		t.Errorf("WritePretty to a failing writer = %v, want %v", err, errWrite)
	}
}
