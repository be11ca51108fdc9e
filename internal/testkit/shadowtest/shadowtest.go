// Package shadowtest is what the tests of the shadow policy share across
// packages: a candidate policy directory, and the shadow's differences
// read back from a decision log. Tests only.
package shadowtest

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/server/shadow"
)

// WriteCandidate writes the bundled policies with grant.rego replaced by
// grant into a new temporary directory and returns it.
func WriteCandidate(t testing.TB, grant string) string {
	t.Helper()
	dir := t.TempDir()
	call, err := toolgate.Bundled.ReadFile(toolgate.BundledPolicyDir + "/call.rego")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "call.rego"), call, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "grant.rego"), []byte(grant), 0o600))
	return dir
}

// Event is one difference the shadow wrote to the decision log.
type Event struct {
	Method, Tool, Subject string
	// Kind is the kind of difference (shadow.GrantedHidden, …).
	Kind string
	// Candidate is the candidate's revision.
	Candidate string
}

// Events reads the shadow's events (shadow.PathCall, shadow.PathList) of
// the decision log at path, in the log's order; a line that is not JSON
// fails the test.
func Events(t testing.TB, path string) []Event {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out []Event
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev struct {
			Path  string `json:"path"`
			Input struct {
				Caller  struct{ Subject string }      `json:"caller"`
				Request struct{ Method, Tool string } `json:"request"`
			} `json:"input"`
			Result struct {
				Kind      string `json:"kind"`
				Candidate struct {
					Revision string `json:"revision"`
				} `json:"candidate"`
			} `json:"result"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &ev))
		if ev.Path == shadow.PathCall || ev.Path == shadow.PathList {
			out = append(out, Event{Method: ev.Input.Request.Method, Tool: ev.Input.Request.Tool,
				Subject: ev.Input.Caller.Subject, Kind: ev.Result.Kind, Candidate: ev.Result.Candidate.Revision})
		}
	}
	require.NoError(t, sc.Err())
	return out
}
