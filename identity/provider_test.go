package identity_test

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/testkit/oidctest"
	"github.com/toolgate/toolgate/toolcall"

	"github.com/toolgate/toolgate/internal/testkit/testclock"
)

// startProvider runs the real OpenID provider of testdata/oidc
// (internal/testkit/oidctest, which skips under -short, and fails under CI when
// node or its npm packages are missing), its trusted issuer on port (0:
// any), until the test ends.
func startProvider(t *testing.T, port int) *oidctest.Provider {
	t.Helper()
	return oidctest.Start(t, port, "")
}

// newClock is a test clock at the real time, which moves only when told.
func newClock() *testclock.Clock { return testclock.New(time.Now()) }

type lockedWriterMu = sync.Mutex

func itoa(i int) string { return strconv.Itoa(i) }

// fakeTokens is a tokens file: token -> subject.
type fakeTokens map[string]string

func (f fakeTokens) Lookup(token string) (*toolcall.Caller, bool) {
	s, ok := f[token]
	if !ok {
		return nil, false
	}
	return &toolcall.Caller{Subject: s}, true
}
