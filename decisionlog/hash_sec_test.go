package decisionlog_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/decisionlog"
)

// logged returns the input.request of the one event l wrote for d.
func logged(t *testing.T, opts decisionlog.Options, d decisionlog.Decision) (map[string]any, string) {
	t.Helper()
	sink := &memSink{}
	l := decisionlog.New(sink, opts)
	l.Log(d)
	if err := l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(sink.events) != 1 {
		t.Fatalf("%d events", len(sink.events))
	}
	var ev struct {
		Input struct {
			Request map[string]any `json:"request"`
		} `json:"input"`
	}
	if err := json.Unmarshal(sink.events[0], &ev); err != nil {
		t.Fatal(err)
	}
	return ev.Input.Request, string(sink.events[0])
}

// TestMetaValuesNeverLogged: _meta is the
// client's, and a client may put a token there: a decision-log event
// names its entries and hashes their values, like the arguments'.
func TestMetaValuesNeverLogged(t *testing.T) {
	t.Parallel()
	d := callDecision("c-1")
	d.Meta = json.RawMessage(`{"festi/runId":"r-1","x-api-key":"S3CRET-key","nested":{"t":"S3CRET-deep"}}`)
	req, line := logged(t, decisionlog.Options{}, d)
	if strings.Contains(line, marker) {
		t.Fatalf("a _meta value reached the event: %s", line)
	}
	meta, _ := req["meta"].(map[string]any)
	if meta["festi/runId"] != decisionlog.SHA256([]byte(`"r-1"`)) || meta["x-api-key"] != decisionlog.SHA256([]byte(`"S3CRET-key"`)) || len(meta) != 3 {
		t.Fatalf("meta = %v", meta)
	}
	if _, keyed := req["hash"]; keyed {
		t.Error(`"hash" without a key`)
	}
}

// TestKeyedHashes: with a hash key, every
// logged hash of a value (each argument, the arguments object, each _meta
// entry) is HMAC-SHA256 under that key, so guessing a small value set
// (an amount, yes/no) from the log needs the key; the event says so.
func TestKeyedHashes(t *testing.T) {
	t.Parallel()
	key := []byte(strings.Repeat("k", 32))
	mac := func(v string) string {
		m := hmac.New(sha256.New, key)
		m.Write([]byte(v))
		return hex.EncodeToString(m.Sum(nil))
	}
	d := callDecision("c-1")
	d.Arguments = json.RawMessage(`{"approve": true, "amount": 5}`)
	d.Meta = json.RawMessage(`{"festi/runId":"r-1"}`)
	req, _ := logged(t, decisionlog.Options{HashKey: key}, d)
	args, _ := req["arguments"].(map[string]any)
	if args["approve"] != mac("true") || args["amount"] != mac("5") {
		t.Errorf("arguments = %v", args)
	}
	if args["approve"] == decisionlog.SHA256([]byte("true")) {
		t.Error("a keyed hash is the plain SHA-256")
	}
	if req["arguments_sha256"] != mac(`{"amount":5,"approve":true}`) {
		t.Errorf("arguments_sha256 = %v", req["arguments_sha256"])
	}
	if meta, _ := req["meta"].(map[string]any); meta["festi/runId"] != mac(`"r-1"`) {
		t.Errorf("meta = %v", meta)
	}
	if req["hash"] != "hmac-sha256" {
		t.Errorf(`"hash" = %v`, req["hash"])
	}
	other, _ := logged(t, decisionlog.Options{HashKey: []byte(strings.Repeat("j", 32))}, d)
	if other["arguments_sha256"] == req["arguments_sha256"] {
		t.Error("two keys, one hash")
	}
}

// TestReadHashKey: the key comes from ${VAR} or a file (one trailing
// newline ignored) and is at least MinHashKeyLen bytes; an error never
// holds the key.
func TestReadHashKey(t *testing.T) {
	key := strings.Repeat("k", decisionlog.MinHashKeyLen)
	t.Setenv("TOOLGATE_TEST_HASH_KEY", key)
	file := filepath.Join(t.TempDir(), "k")
	if err := os.WriteFile(file, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{"${TOOLGATE_TEST_HASH_KEY}", file} {
		if got, err := decisionlog.ReadHashKey(ref); err != nil || string(got) != key {
			t.Errorf("ReadHashKey(%s) = %q, %v; want the key", ref, got, err)
		}
	}
	if got, err := decisionlog.ReadHashKey(""); got != nil || err != nil {
		t.Errorf("ReadHashKey(\"\") = %q, %v; want no key", got, err)
	}
	if err := os.WriteFile(file, []byte("short-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := decisionlog.ReadHashKey(file)
	if err == nil || !strings.Contains(err.Error(), "the key is 12 bytes; want at least 32") || strings.Contains(err.Error(), "short-secret") {
		t.Errorf("a short key: %v", err)
	}
	// A URL target needs a host; anything else is a file, checked when opened.
	for target, ok := range map[string]bool{"https://logs.example.com/v1": true, "http:///v1": false, "decisions.jsonl": true} {
		if got := decisionlog.CheckTarget(target) == nil; got != ok {
			t.Errorf("CheckTarget(%q) accepted %v, want %v", target, got, ok)
		}
	}
}
