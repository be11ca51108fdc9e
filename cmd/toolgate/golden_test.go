package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/toolgate/toolgate/methods"
)

var update = flag.Bool("update", false, "rewrite the .golden files under testdata/golden")

// goldenDir is absolute, so cases that change directory find it too.
var goldenDir = func() string {
	d, err := filepath.Abs(filepath.Join("testdata", "golden"))
	if err != nil {
		panic(err)
	}
	return d
}()

// goldenCase is one run of the binary whose output is pinned in
// testdata/golden/<name>.golden. The file opens with pins, a line saying
// what the case pins down.
type goldenCase struct {
	name string
	pins string
	args []string
}

// durations are the times opa-test-like output prints; they never repeat.
var durations = regexp.MustCompile(`\((\d+(\.\d+)?(ns|µs|ms|s|m|h))+\)`)

// runGolden runs c through run, as main does, and compares the exit code,
// stdout and stderr with the golden file.
func runGolden(t *testing.T, c goldenCase) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), &env{args: c.args, stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr})
	var got bytes.Buffer
	fmt.Fprintf(&got, "# %s\n$ toolgate %s\nexit %d\n", c.pins, strings.Join(quoteArgs(c.args), " "), code)
	fmt.Fprintf(&got, "--- stdout\n%s", stdout.String())
	fmt.Fprintf(&got, "--- stderr\n%s", stderr.String())
	out := durations.ReplaceAll(got.Bytes(), []byte("(DURATION)"))
	checkGolden(t, filepath.Join(goldenDir, c.name+".golden"), out)
}

// checkGolden compares got with the file at path, or rewrites it with -update.
func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test -update to create it")
	require.Equal(t, string(want), string(got), "%s differs; run go test -update if the change is meant", path)
}

func quoteArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \"'{}$") {
			a = "'" + a + "'"
		}
		out[i] = a
	}
	return out
}

// specMethods are Go methods with the arguments of docs/contract.md §8's demo methods,
// so the golden output of check does not depend on the binary's own.
func specMethods() methods.Set {
	type money struct {
		Amount   string `json:"amount"`
		Currency string `json:"currency"`
	}
	m := methods.Map{}
	m.Register("demo.echo", func(_ context.Context, a struct {
		Text string `json:"text"`
	}) (string, error) {
		return a.Text, nil
	})
	m.Register("demo.add", func(_ context.Context, a struct {
		A int `json:"a"`
		B int `json:"b"`
	}) (int, error) {
		return a.A + a.B, nil
	})
	m.Register("demo.getReward", func(_ context.Context, a struct {
		IDReward int    `json:"idReward"`
		Note     string `json:"note"`
	}) (any, error) {
		return a, nil
	})
	m.Register("demo.price", func(_ context.Context, a struct {
		Price money `json:"price"`
	}) (string, error) {
		return a.Price.Amount + " " + a.Price.Currency, nil
	})
	m.Register("demo.fail", func(context.Context, struct{}) (string, error) { return "", fmt.Errorf("fail") })
	m.Register("demo.inner", func(_ context.Context, a struct {
		IDReward int `json:"idReward"`
	}) (string, error) {
		return "", nil
	})
	m.Register("demo.count", func(_ context.Context, a struct {
		Key string `json:"key"`
	}) (int, error) {
		return 1, nil
	})
	m.Register("demo.sleep", func(_ context.Context, a struct {
		MS int `json:"ms"`
	}) (int, error) {
		return a.MS, nil
	})
	m.Register("demo.execUrl", func(_ context.Context, a struct {
		URL string `json:"url"`
	}) (string, error) {
		return a.URL, nil
	})
	return m
}
