package decisionlog_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/decisionlog"
)

// notifyingBuffer is a log destination a test can wait on.
type notifyingBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	written chan struct{}
}

func (n *notifyingBuffer) Write(p []byte) (int, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.b.Write(p)
	select {
	case n.written <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (n *notifyingBuffer) String() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.b.String()
}

// TestUploadURLSecretsNeverLogged: sinks take a
// token in the query string (or the user information); a failing upload is
// logged on every retry, and that line names the sink without them.
func TestUploadURLSecretsNeverLogged(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close() // every upload fails to connect
	for name, target := range map[string]string{
		"query":     srv.URL + "/logs?api_key=s3cr3t-query&x=1",
		"userinfo":  strings.Replace(srv.URL, "http://", "http://bob:s3cr3t-pass@", 1) + "/logs",
		"bad parse": srv.URL + "/logs%zz?api_key=s3cr3t-query",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			out := &notifyingBuffer{written: make(chan struct{}, 1)}
			l, err := decisionlog.Open(target, decisionlog.Options{
				BatchSize: 1,
				Backoff:   func(int) time.Duration { return time.Millisecond },
				Logger:    slog.New(slog.NewTextHandler(out, nil)),
			})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { // the sink is down: do not wait for it at close
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				_ = l.Close(ctx)
			}()
			l.Log(callDecision("c-1"))
			for strings.Count(out.String(), "write failed, retrying") < 2 {
				select {
				case <-out.written:
				case <-time.After(deadline):
					t.Fatalf("no retry logged: %s", out.String())
				}
			}
			log := out.String()
			if strings.Contains(log, "s3cr3t") {
				t.Fatalf("the URL's secret reached the log:\n%s", log)
			}
			if name != "bad parse" && !strings.Contains(log, "REDACTED") {
				t.Fatalf("the log does not say which sink:\n%s", log)
			}
		})
	}
}

func TestRedactURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"https://logs.example.com/v1/logs":           "https://logs.example.com/v1/logs",
		"https://logs.example.com/v1/logs?token=abc": "https://logs.example.com/v1/logs?REDACTED",
		"https://u:p@logs.example.com/v1":            "https://REDACTED@logs.example.com/v1",
		"https://logs.example.com/v1?":               "https://logs.example.com/v1?REDACTED",
		"https://logs.example.com/v1#tok":            "https://logs.example.com/v1#REDACTED",
		"https://logs.example.com/%zz?token=abc":     "REDACTED",
		"http://127.0.0.1:9/x?a=1&b=2":               "http://127.0.0.1:9/x?REDACTED",
	} {
		if got := decisionlog.RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzRedactURL: whatever the sink URL, what RedactURL returns holds no
// query, fragment or user information of it, only REDACTED in their place.
func FuzzRedactURL(f *testing.F) {
	f.Add("https://u:p@logs.example.com/v1?token=abc#frag")
	f.Add("http://127.0.0.1:9/x?")
	f.Add("https://logs.example.com/%zz?token=abc")
	f.Add("https://[::1]:8/a;b?c=d")
	f.Fuzz(func(t *testing.T, u string) {
		got := decisionlog.RedactURL(u)
		p, err := url.Parse(got)
		if err != nil {
			t.Fatalf("RedactURL(%q) = %q, which does not parse: %v", u, got, err)
		}
		if p.User != nil && p.User.String() != "REDACTED" {
			t.Errorf("RedactURL(%q) = %q: user information kept", u, got)
		}
		if p.RawQuery != "" && p.RawQuery != "REDACTED" {
			t.Errorf("RedactURL(%q) = %q: query kept", u, got)
		}
		if p.Fragment != "" && p.Fragment != "REDACTED" {
			t.Errorf("RedactURL(%q) = %q: fragment kept", u, got)
		}
	})
}
