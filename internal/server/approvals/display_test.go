package approvals_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/server/approvals"
)

// exactArgs are the approval page's worst case: an integer a float64
// cannot hold, and a right-to-left override that reorders what follows.
const exactArgs = `{"amount":9007199254740993,"memo":"1234` + "\u202e" + `5678","note":"a` + "\u200b" + `b\\u202e"}`

// TestArgumentsTextShowsTheExactCall: numbers keep their digits, hidden
// characters show as escapes (a backslash the caller sent stays apart
// from them), a long value is shown whole, and the text is still the
// same JSON value.
func TestArgumentsTextShowsTheExactCall(t *testing.T) {
	t.Parallel()
	text := approvals.ArgumentsText(json.RawMessage(exactArgs))
	assert.Contains(t, text, "9007199254740993")
	assert.Contains(t, text, `"1234\u202e5678"`)
	assert.Contains(t, text, `"a\u200bb\\u202e"`)
	assert.NotContains(t, text, "\u202e")
	assert.NotContains(t, text, "\u200b")
	assertSameJSON(t, exactArgs, text)

	long := `{"to":"` + strings.Repeat("x", 100000) + `end"}`
	assert.Contains(t, approvals.ArgumentsText(json.RawMessage(long)), strings.Repeat("x", 100000)+`end"`)

	for _, r := range []rune{'\u202e', '\u2066', '\u200b', '\u200d', '\u00ad', '\ufeff', '\u3164', '\ufe0f', '\u2028', '\u00a0', '\U000e0041', '\ue000', '\x7f'} {
		assert.True(t, approvals.Hidden(r), "%U", r)
	}
	for _, r := range []rune{'a', 'é', '中', '€', ' ', '😀'} {
		assert.False(t, approvals.Hidden(r), "%U", r)
	}
	assert.Equal(t, `a\\b\u202e`+"😀"+`\xff`, approvals.Visible("a\\b\u202e😀\xff"))
	assert.Equal(t, `\udb40\udc41`, approvals.Visible("\U000e0041"))
}

// TestApprovalsListShowsTheExactCall: `toolgate approvals list` (text
// and JSON) shows the arguments as the page does.
func TestApprovalsListShowsTheExactCall(t *testing.T) {
	t.Parallel()
	r := approvals.Request{ID: "id1", Subject: "alice", Tool: "pay", Reason: "money\u202e", Arguments: json.RawMessage(exactArgs),
		ArgumentsText: approvals.ArgumentsText(json.RawMessage(exactArgs)), Approvers: []string{"admin"}, Status: "pending"}
	var text, js bytes.Buffer
	require.NoError(t, approvals.WriteList(&text, []approvals.Request{r}, false))
	require.NoError(t, approvals.WriteList(&js, []approvals.Request{r}, true))
	for _, out := range []string{text.String(), js.String()} {
		assert.Contains(t, out, "9007199254740993")
		assert.Contains(t, out, `1234\u202e5678`)
		assert.NotContains(t, out, "\u202e")
		assert.NotContains(t, out, "\u200b")
	}
	assert.Contains(t, text.String(), `money\u202e`)
	var back []approvals.Request
	dec := json.NewDecoder(&js)
	dec.UseNumber()
	require.NoError(t, dec.Decode(&back))
	assertSameJSON(t, exactArgs, string(back[0].Arguments))
}

// TestWebhookShowsWhatItNames: the webhook's payload escapes hidden
// characters (the same JSON value) and its text line shows them.
func TestWebhookShowsWhatItNames(t *testing.T) {
	t.Parallel()
	got := make(chan []byte, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- b
	}))
	t.Cleanup(srv.Close)
	wh := approvals.NewWebhook(srv.URL, approvals.WebhookOptions{})
	t.Cleanup(func() { _ = wh.Close() })
	wh.Notify(approvals.Request{ID: "id1", Subject: "bob\u202eevil", Tool: "pay", Reason: "pay 1234\u202e5678", Approvers: []string{"admin"}})
	select {
	case b := <-got:
		assert.NotContains(t, string(b), "\u202e")
		var ev approvals.WebhookEvent
		require.NoError(t, json.Unmarshal(b, &ev))
		assert.Equal(t, "bob\u202eevil", ev.Subject, "the same value")
		assert.Equal(t, `Approval id1 requested: pay by bob\u202eevil: pay 1234\u202e5678`, ev.Text)
	case <-time.After(time.Minute): // a failure bound only
		t.Fatal("the webhook was not called")
	}
}

// FuzzVisibleJSON: for any JSON text, VisibleJSON is the same value with
// no hidden character left.
func FuzzVisibleJSON(f *testing.F) {
	for _, s := range []string{exactArgs, `{}`, `"\u202e"`, `["\\", "\"", 1e400]`, "{\"a\u2028\":\"\U000e0041\"}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		out := approvals.VisibleJSON(data)
		require.True(t, json.Valid(out), "%q → %q", data, out)
		assertSameJSON(t, string(data), string(out))
		for _, r := range string(out) {
			// JSON whitespace may stand between values; a string holds
			// no raw control character.
			if r != utf8.RuneError && r != '\t' && r != '\n' && r != '\r' {
				require.False(t, approvals.Hidden(r), "%q left %U in %q", data, r, out)
			}
		}
	})
}

func assertSameJSON(t *testing.T, want, got string) {
	t.Helper()
	decode := func(s string) any {
		dec := json.NewDecoder(strings.NewReader(s))
		dec.UseNumber()
		var v any
		require.NoError(t, dec.Decode(&v))
		return v
	}
	assert.Equal(t, decode(want), decode(got))
}
