package upstream

import (
	"bytes"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/testkit/testserver"
)

// slowWatch is a Stderr for a pool of upstreamtest processes: it passes
// everything to the test log and reports each slow call that starts
// sleeping (testserver.SlowStartedLine), so a test knows a call is in
// flight without guessing how long that takes.
type slowWatch struct {
	t       *testing.T
	started chan int // the ms of each slow call that started
	mu      sync.Mutex
	partial []byte
}

func newSlowWatch(t *testing.T) *slowWatch {
	return &slowWatch{t: t, started: make(chan int, 64)}
}

func (w *slowWatch) Write(b []byte) (int, error) {
	w.t.Logf("upstream stderr: %s", b)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.partial = append(w.partial, b...)
	for {
		line, rest, ok := bytes.Cut(w.partial, []byte("\n"))
		if !ok {
			break
		}
		w.partial = rest
		if ms, ok := bytes.CutPrefix(line, []byte(testserver.SlowStartedLine+" ")); ok {
			if n, err := strconv.Atoi(string(ms)); err == nil {
				select {
				case w.started <- n:
				default:
				}
			}
		}
	}
	return len(b), nil
}

// wait blocks until a slow call for ms milliseconds is in flight (give the
// call a ms no other call of the test uses) and reports whether it is; the
// bound is a failure bound only. It is safe to call from any goroutine.
func (w *slowWatch) wait(ms int) bool {
	fail := time.After(time.Minute)
	for {
		select {
		case n := <-w.started:
			if n == ms {
				return true
			}
		case <-fail:
			w.t.Errorf("the upstream's slow call of %d ms never started", ms)
			return false
		}
	}
}
