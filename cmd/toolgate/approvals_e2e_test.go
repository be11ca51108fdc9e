package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/identity"
	"github.com/toolgate/toolgate/internal/testkit/mcptest"
)

const secondAdminToken = "e2e-second-admin-token"

var approvalIDRE = regexp.MustCompile(`\(approval [0-9a-f]{24}\)`)

// maskApprovalIDs replaces the id of a held answer (docs/contract.md §13) with ID:
// the fixtures' ids are predictable, the binary's random.
func maskApprovalIDs(s string) string { return approvalIDRE.ReplaceAllString(s, "(approval ID)") }

// TestE2EApprovals drives the bundled example's approvals through the
// binary (docs/contract.md §13): ann's destructive call is held, the webhook hears of
// it, bea approves it with `toolgate approvals` against the same SQLite
// ledger, the identical call runs once; a second request is refused over
// HTTP with bea's token and answered so once.
func TestE2EApprovals(t *testing.T) {
	skipShort(t)
	t.Parallel()
	dir := t.TempDir()
	tokens := mcptest.WriteTokens(t, dir, map[string]identity.TokenEntry{
		adminToken:       {Subject: "ann", Roles: []string{"admin"}},
		secondAdminToken: {Subject: "bea", Roles: []string{"admin"}},
		managerToken:     {Subject: "max", Roles: []string{"manager"}},
	})
	ledgerSpec := "sqlite:" + filepath.Join(dir, "state", "ledger.db")

	hooked := make(chan map[string]any, 4)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev map[string]any
		if json.NewDecoder(r.Body).Decode(&ev) == nil {
			hooked <- ev
		}
	}))
	t.Cleanup(hook.Close)

	s := serveHTTP(t, "--tokens", tokens, "--ledger", ledgerSpec, "--approval-webhook", hook.URL)
	ann := s.connect(t, adminToken, "2025-11-25", nil)

	held := call(t, ann, "resetCounter", map[string]any{"key": "e2e"}, nil)
	require.True(t, held.IsError)
	m := heldResetCounter.FindStringSubmatch(held.Text)
	require.NotNil(t, m, held.Text)
	id := m[1]

	select {
	case ev := <-hooked:
		require.Equal(t, id, ev["id"])
		require.Equal(t, "ann", ev["subject"])
		require.Equal(t, "resetCounter", ev["tool"])
		require.Equal(t, []any{"admin"}, ev["approvers"])
		require.NotContains(t, ev, "arguments", "the webhook never gets the arguments")
	case <-time.After(callTimeout):
		t.Fatal("the webhook heard of no request")
	}

	cli := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := run(t.Context(), &env{args: append([]string{"approvals"}, args...), stdin: strings.NewReader(""), stdout: &out, stderr: &errOut})
		return code, out.String(), errOut.String()
	}
	code, out, _ := cli("list", "--as", "bea", "--role", "admin", "--ledger", ledgerSpec)
	require.Equal(t, 0, code)
	require.Contains(t, out, id)
	require.Contains(t, out, "arguments of "+id+":\n{\n  \"key\": \"e2e\"\n}\n")
	code, _, errOut := cli("approve", id, "--as", "ann", "--role", "admin", "--ledger", ledgerSpec)
	require.Equal(t, 1, code, "the requester cannot approve her own request")
	require.Contains(t, errOut, "may not decide")
	code, _, errOut = cli("approve", id, "--as", "max", "--role", "manager", "--ledger", ledgerSpec)
	require.Equal(t, 1, code, "a caller without the role cannot approve")
	require.Contains(t, errOut, "no approval request "+id+" that max may decide", "as for an unknown id")
	code, out, _ = cli("approve", id, "--as", "bea", "--role", "admin", "--note", "go ahead", "--ledger", ledgerSpec)
	require.Equal(t, 0, code)
	require.Contains(t, out, "approved "+id)

	require.Equal(t, ok("1"), call(t, ann, "resetCounter", map[string]any{"key": "e2e"}, nil), "the approved call runs")
	again := call(t, ann, "resetCounter", map[string]any{"key": "e2e"}, nil)
	m = heldResetCounter.FindStringSubmatch(again.Text)
	require.NotNil(t, m, "an approval is used once: %s", again.Text)
	next := m[1]
	require.NotEqual(t, id, next)

	// Over HTTP with bea's own token: refuse; the refusal is answered once.
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.base+"/approvals/"+next+"/refuse", strings.NewReader(`{"note":"not today"}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+secondAdminToken)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	require.Equal(t, refused("Approval "+next+" was refused."), call(t, ann, "resetCounter", map[string]any{"key": "e2e"}, nil))
	third := call(t, ann, "resetCounter", map[string]any{"key": "e2e"}, nil)
	require.Regexp(t, heldResetCounter, third.Text)

	// A right-to-left override in the arguments and the reason's text:
	// `approvals list` and the webhook show it as an escape.
	for len(hooked) > 0 {
		<-hooked
	}
	bidi := call(t, ann, "resetCounter", map[string]any{"key": "1234\u202e5678"}, nil)
	m = heldResetCounter.FindStringSubmatch(bidi.Text)
	require.NotNil(t, m, bidi.Text)
	code, out, _ = cli("list", "--as", "bea", "--role", "admin", "--ledger", ledgerSpec)
	require.Equal(t, 0, code)
	require.Contains(t, out, `"key": "1234\u202e5678"`)
	require.NotContains(t, out, "\u202e")
	code, out, _ = cli("list", "--as", "bea", "--role", "admin", "--ledger", ledgerSpec, "--format", "json")
	require.Equal(t, 0, code)
	require.Contains(t, out, `1234\\u202e5678`, "arguments_text in JSON")
	require.NotContains(t, out, "\u202e")
	// The webhook is asynchronous: events of the earlier requests may still
	// arrive; the one of this request must.
	for {
		select {
		case ev := <-hooked:
			if ev["id"] != m[1] {
				continue
			}
			require.NotContains(t, ev, "arguments")
			require.Equal(t, "token", ev["source"])
			return
		case <-time.After(callTimeout):
			t.Fatal("the webhook heard of no request")
		}
	}
}
