package wire_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/wire"
)

// bigPing is one ping request of about n bytes, its params an array of
// numbers nobody governs.
func bigPing(n int) []byte {
	b := []byte(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":[`)
	for len(b) < n-8 {
		b = append(b, "12345,"...)
	}
	return append(b, "1]}}"...)
}

// emptyObjects is a batch of {} of about n bytes.
func emptyObjects(n int) []byte {
	b := make([]byte, 0, n+3)
	b = append(b, '[')
	for len(b) < n-3 {
		b = append(b, "{},"...)
	}
	return append(b, "{}]"...)
}

// TestWalkDoesNotDecode: what the wire layer does not govern it
// neither decodes nor encodes: such a body comes back as sent, the same
// slice, without an allocation, however large. (Not parallel:
// AllocsPerRun.)
func TestWalkDoesNotDecode(t *testing.T) {
	for name, body := range map[string][]byte{
		"4 MiB ping":           bigPing(wire.MaxBodyBytes),
		"a batch of {}":        emptyObjects(wire.MaxBatch*3 - 1),
		"spaced batch of ping": []byte("[ {\"jsonrpc\":\"2.0\", \"id\":1, \"method\":\"ping\"} ,\n{\"jsonrpc\":\"2.0\",\"method\":\"tools/callx\"} ]"),
		"not JSON":             []byte("][ nothing"),
	} {
		t.Run(name, func(t *testing.T) {
			var out []byte
			allocs := testing.AllocsPerRun(5, func() {
				var err error
				out, err = wire.RewriteBody(body)
				require.NoError(t, err)
			})
			assert.Zero(t, allocs)
			assert.Equal(t, &body[0], &out[0], "the body itself")
		})
	}
}

// TestRewriteBody: only the tools/call and tools/list requests of a body
// are rewritten; every other byte stays as sent.
func TestRewriteBody(t *testing.T) {
	t.Parallel()
	ping := "{\"jsonrpc\":\"2.0\", \"id\":1,  \"method\":\"ping\"}"
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":7,"arguments":{}}}`
	escaped := `{"jsonrpc":"2.0","id":3,"m\u0065thod":"tools\/list","params":{}}`
	tests := []struct {
		name      string
		body      string
		rewritten []int // which messages changed
	}{
		{"a call", call, []int{0}},
		{"a ping", ping, nil},
		{"a batch", "[" + ping + ",\n " + call + " , " + ping + "]", []int{1}},
		{"escaped key and value", "[" + escaped + "]", []int{0}},
		{"a string holding a method", `[{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"\"method\":\"tools/call\""}}]`, nil},
		{"a nested method", `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"method":"tools/call"}}`, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := wire.RewriteBody([]byte(tc.body))
			require.NoError(t, err)
			if len(tc.rewritten) == 0 {
				assert.Equal(t, tc.body, string(out))
				return
			}
			var in, got []json.RawMessage
			if strings.HasPrefix(tc.body, "[") {
				require.NoError(t, json.Unmarshal([]byte(tc.body), &in))
				require.NoError(t, json.Unmarshal(out, &got))
			} else {
				in, got = []json.RawMessage{json.RawMessage(tc.body)}, []json.RawMessage{out}
			}
			require.Len(t, got, len(in))
			for i := range in {
				changed := string(in[i]) != string(got[i])
				want := false
				for _, j := range tc.rewritten {
					want = want || i == j
				}
				assert.Equal(t, want, changed, "message %d: %s", i, got[i])
				if changed {
					assert.Contains(t, string(got[i]), "toolgate.internal/wire")
				}
			}
		})
	}
	t.Run("the call's integer name became a string", func(t *testing.T) {
		out, err := wire.RewriteBody([]byte(call))
		require.NoError(t, err)
		assert.Contains(t, string(out), `"name":"7"`)
	})
}

// TestBatchOverCap: a batch over MaxBatch is refused whole, by
// RewriteBody and over HTTP (400, JSON-RPC -32600), before the handler.
func TestBatchOverCap(t *testing.T) {
	t.Parallel()
	_, err := wire.RewriteBody(emptyObjects(3*wire.MaxBatch - 1))
	require.NoError(t, err)
	_, err = wire.RewriteBody(emptyObjects(3*wire.MaxBatch + 2))
	require.ErrorIs(t, err, wire.ErrBatchTooLarge)

	called := false
	h := wire.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { called = true }))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/mcp", bytes.NewReader(emptyObjects(1<<20))))
	assert.False(t, called)
	assert.Equal(t, http.StatusBadRequest, rec.Code)
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"batch of more than 100 messages"}}`, rec.Body.String())
}

// serveWire runs one POST of body through Handler (its handler discards
// what it gets) and returns the status. length -1 sends no Content-Length.
func serveWire(h http.Handler, body []byte, length int64) int {
	req := httptest.NewRequest(http.MethodPost, "/mcp", bytes.NewReader(body))
	req.ContentLength = length
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code
}

var discard = http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { _, _ = io.Copy(io.Discard, r.Body) })

// BenchmarkWireLargeBodies: the server time of the wire layer for large
// bodies, at and just over the 4 MiB cap (docs/contract.md §11: linear in
// the body, small constant).
//
//	go test ./internal/wire -run '^$' -bench LargeBodies -benchmem
func BenchmarkWireLargeBodies(b *testing.B) {
	over := bytes.Repeat([]byte(" "), wire.MaxBodyBytes+1)
	for _, bc := range []struct {
		name   string
		body   []byte
		length int64
		status int
	}{
		{"1MiB_of_empty_objects", emptyObjects(1 << 20), 1 << 20, http.StatusBadRequest},
		{"4MiB_ping", bigPing(wire.MaxBodyBytes), wire.MaxBodyBytes, http.StatusOK},
		{"4MiB+1_with_length", over, int64(len(over)), http.StatusRequestEntityTooLarge},
		{"4MiB+1_chunked", over, -1, http.StatusRequestEntityTooLarge},
	} {
		b.Run(bc.name, func(b *testing.B) {
			h := wire.Handler(discard)
			b.SetBytes(int64(len(bc.body)))
			b.ReportAllocs()
			for b.Loop() {
				if got := serveWire(h, bc.body, bc.length); got != bc.status {
					b.Fatalf("status %d, want %d", got, bc.status)
				}
			}
		})
	}
}
