package identity_test

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/testkit/oidctest"

	"github.com/toolgate/toolgate/engine"
)

// startProvider runs the real OpenID provider of testdata/oidc
// (internal/testkit/oidctest, which skips under -short, and fails under CI when
// node or its npm packages are missing), its trusted issuer on port (0:
// any), until the test ends.
func startProvider(t *testing.T, port int) *oidctest.Provider {
	t.Helper()
	return oidctest.Start(t, port, "")
}

// clock is a test clock that moves only when told.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Now()} }

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

type lockedWriterMu = sync.Mutex

func itoa(i int) string { return strconv.Itoa(i) }

// fakeTokens is a tokens file: token -> subject.
type fakeTokens map[string]string

func (f fakeTokens) Lookup(token string) (*engine.Caller, bool) {
	s, ok := f[token]
	if !ok {
		return nil, false
	}
	return &engine.Caller{Subject: s}, true
}
