package decisionlog

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/toolgate/toolgate/internal/urlx"
)

// HTTPSink POSTs each batch to URL as one gzip-compressed JSON array of
// events, with Content-Type application/json and Content-Encoding gzip: the
// upload of OPA's decision-log plugin. A status outside 2xx fails the batch.
type HTTPSink struct {
	URL    string
	Client *http.Client
}

// StatusError is an upload answered with a status outside 2xx.
type StatusError struct{ StatusCode int }

func (e *StatusError) Error() string {
	return fmt.Sprintf("decision log upload: status %d", e.StatusCode)
}

// Write implements Sink.
func (s *HTTPSink) Write(ctx context.Context, events []json.RawMessage) error {
	body, err := gzipArray(events)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("decision log upload: %w", redactURLError(err, s.URL))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Content-Encoding", "gzip")
	resp, err := s.Client.Do(req)
	if err != nil {
		return fmt.Errorf("decision log upload: %w", redactURLError(err, s.URL))
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return &StatusError{StatusCode: resp.StatusCode}
	}
	return nil
}

// Close implements Sink.
func (s *HTTPSink) Close() error { return nil }

// RedactURL returns u without what sinks put secrets in: the user
// information, the query and the fragment are replaced by "REDACTED"
// (scheme, host and path stay, to say which sink); see urlx.Redact.
func RedactURL(u string) string { return urlx.Redact(u) }

// redactURLError returns err with the URL it names redacted (RedactURL):
// a *url.Error's URL, and any other error that quotes raw whole.
func redactURLError(err error, raw string) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return &url.Error{Op: ue.Op, URL: RedactURL(ue.URL), Err: redactURLError(ue.Err, raw)}
	}
	if raw != "" && strings.Contains(err.Error(), raw) {
		return errors.New(strings.ReplaceAll(err.Error(), raw, RedactURL(raw)))
	}
	return err
}

func gzipArray(events []json.RawMessage) ([]byte, error) {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	_, _ = w.Write([]byte{'['})
	for i, e := range events {
		if i > 0 {
			_, _ = w.Write([]byte{','})
		}
		_, _ = w.Write(e)
	}
	_, _ = w.Write([]byte{']'})
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("decision log: gzip: %w", err)
	}
	return buf.Bytes(), nil
}

// FileSink appends each event as one JSON line to a file.
type FileSink struct {
	f *os.File
}

// OpenFile opens path for appending, creating it readable by its owner only.
func OpenFile(path string) (*FileSink, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("decision log: %w", err)
	}
	return &FileSink{f: f}, nil
}

// Write implements Sink: the batch is written in one write call.
func (s *FileSink) Write(_ context.Context, events []json.RawMessage) error {
	var buf bytes.Buffer
	for _, e := range events {
		buf.Write(e)
		buf.WriteByte('\n')
	}
	if _, err := s.f.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("decision log: %w", err)
	}
	return nil
}

// Close implements Sink.
func (s *FileSink) Close() error { return s.f.Close() }
