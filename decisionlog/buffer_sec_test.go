package decisionlog_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/decisionlog"
)

// stalledSink accepts nothing until released: a sink that is down.
type stalledSink struct{ release chan struct{} }

func (s *stalledSink) Write(ctx context.Context, _ []json.RawMessage) error {
	select {
	case <-s.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (*stalledSink) Close() error { return nil }

// TestBufferBoundedInBytes: the buffer is bounded in bytes, not only in
// events. An event is as large as its caller makes it (each argument
// name stays, with a 64-byte hash for its value: a 4 MiB body of short
// names is an event of some 30 MiB, twice per call), so with the sink
// down 10 000 buffered events could be hundreds of gigabytes. Past
// DefaultBufferBytes an event is dropped and counted.
func TestBufferBoundedInBytes(t *testing.T) {
	t.Parallel()
	sink := &stalledSink{release: make(chan struct{})}
	l := decisionlog.New(sink, decisionlog.Options{})
	// A large event, made cheaply: a _meta of 1 MiB (the observer's is
	// bounded to some 130 KiB; hashed values are as large as their names).
	meta := json.RawMessage(`{"` + strings.Repeat("x", 1<<20) + `":1}`)
	d := decisionlog.Decision{ID: "x", Path: decisionlog.PathCall, Method: "tools/call", Tool: "t", Subject: "alice", Meta: meta}
	one := meta
	const n = 100
	for range n {
		l.Log(d)
	}
	close(sink.release)
	if err := l.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	kept := n - int(l.Dropped())
	if max := decisionlog.DefaultBufferBytes/len(one) + 1; kept > max {
		t.Errorf("%d events of %d KiB buffered while the sink was down, want at most %d (DefaultBufferBytes)", kept, len(one)>>10, max)
	}
	if kept == 0 {
		t.Error("nothing was kept")
	}
}
