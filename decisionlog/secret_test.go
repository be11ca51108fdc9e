package decisionlog_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/toolgate/toolgate/decisionlog"
)

// memSink keeps what it is given.
type memSink struct {
	mu     sync.Mutex
	events []json.RawMessage
}

func (s *memSink) Write(_ context.Context, events []json.RawMessage) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, events...)
	return nil
}

func (s *memSink) Close() error { return nil }

const marker = "S3CRET-"

// FuzzNoArgumentValue: whatever the arguments, no value of one (here, a
// string carrying a marker, at the top level and nested) appears in an event.
func FuzzNoArgumentValue(f *testing.F) {
	f.Add("note", "private words", 7.5)
	f.Add("", "", 0.0)
	f.Add("a\"b", "\\u0000", -1e300)
	f.Fuzz(func(t *testing.T, key, value string, num float64) {
		if strings.Contains(key, marker) || strings.Contains(key, "123456789.987654321") {
			t.Skip("the key itself carries the marker; keys are logged")
		}
		if !utf8.ValidString(key) || key == "nested" || key == "amount" {
			t.Skip("the key would not name its own argument")
		}
		secret := marker + value
		args, err := json.Marshal(map[string]any{
			key:      secret,
			"nested": map[string]any{"deep": []any{secret, num}},
			"amount": json.Number("123456789.987654321"),
		})
		if err != nil {
			t.Skip()
		}
		sink := &memSink{}
		l := decisionlog.New(sink, decisionlog.Options{})
		d := callDecision("c-1")
		d.Arguments = args
		l.Log(d)
		if err := l.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if len(sink.events) != 1 {
			t.Fatalf("%d events", len(sink.events))
		}
		ev := string(sink.events[0])
		for _, leak := range []string{marker, "123456789.987654321"} {
			if strings.Contains(ev, leak) {
				t.Fatalf("event holds an argument value (%q): %s", leak, ev)
			}
		}
		var e struct {
			Input struct {
				Request struct {
					Arguments map[string]string `json:"arguments"`
				} `json:"request"`
			} `json:"input"`
		}
		if err := json.Unmarshal(sink.events[0], &e); err != nil {
			t.Fatal(err)
		}
		if got := e.Input.Request.Arguments; len(got) != 3 || len(got[key]) != 64 || len(got["nested"]) != 64 {
			t.Fatalf("hashed arguments %v", got)
		}
	})
}

func TestSHA256IsCanonical(t *testing.T) {
	t.Parallel()
	// The same hash as the audit trail's arguments_sha256: keys sorted,
	// whitespace dropped, numbers kept as their text.
	a := decisionlog.SHA256([]byte(`{"b": 1.0, "a": [1, "<x>"]}`))
	b := decisionlog.SHA256([]byte(`{"a":[1,"<x>"],"b":1.0}`))
	c := decisionlog.SHA256([]byte(`{"a":[1,"<x>"],"b":1}`))
	if a != b || a == c {
		t.Fatalf("canonical hashes: %s %s %s", a, b, c)
	}
	if got := decisionlog.HashArguments(json.RawMessage(`[1,2]`)); len(got) != 0 {
		t.Fatalf("non-object arguments hashed to %v", got)
	}
}
