package wire

import (
	"io"
	"mime"
	"net/http"
	"strconv"
)

// SSERetry is the reconnection delay, in milliseconds, that every
// server-sent event stream toolgate answers announces first (the SSE
// retry field, docs/contract.md §19): a client whose stream breaks waits
// that long before it reconnects.
const SSERetry = 1000

// sseRetryField opens an event stream: a retry field alone, which sets the
// client's reconnection delay and dispatches no event.
var sseRetryField = "retry: " + strconv.Itoa(SSERetry) + "\n\n"

// retryWriter writes sseRetryField first on an event stream answered 200.
type retryWriter struct {
	http.ResponseWriter
	wrote bool
}

func (w *retryWriter) WriteHeader(code int) {
	if w.wrote {
		w.ResponseWriter.WriteHeader(code)
		return
	}
	w.wrote = true
	w.ResponseWriter.WriteHeader(code)
	if ct, _, _ := mime.ParseMediaType(w.Header().Get("Content-Type")); code == http.StatusOK && ct == "text/event-stream" {
		_, _ = io.WriteString(w.ResponseWriter, sseRetryField)
	}
}

func (w *retryWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the writer's Flush and
// deadlines.
func (w *retryWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
