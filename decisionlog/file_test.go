package decisionlog_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/plugins/logs"

	"github.com/toolgate/toolgate/decisionlog"
)

func TestFileOneEventPerLine(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "decisions.jsonl")
	l, err := decisionlog.Open(path, decisionlog.Options{FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"c-1", "c-2", "c-3"} {
		l.Log(callDecision(id))
	}
	if err := l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		var e logs.EventV1
		if err := dec.Decode(&e); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		ids = append(ids, e.DecisionID)
	}
	if len(ids) != 3 || ids[0] != "c-1" || ids[2] != "c-3" {
		t.Fatalf("lines hold %v", ids)
	}
}
