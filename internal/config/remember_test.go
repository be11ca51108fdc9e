package config_test

import (
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/config"
)

// TestUpstreamRemember: an upstream's remember is a mapping of tool
// names to lists of argument names; anything else is a wrong kind of
// value; an --upstream flag replacing the file's upstream keeps it.
func TestUpstreamRemember(t *testing.T) {
	t.Parallel()
	path, _ := writeConfig(t, "upstreams:\n  - {name: search, url: \"http://127.0.0.1:1/mcp\", import: true, remember: {query: [q, page], fetch: [url]}}\n")
	s, err := config.LoadServe([]string{"--config", path}, io.Discard)
	require.NoError(t, err)
	require.Len(t, s.Upstreams, 1)
	want := map[string][]string{"query": {"q", "page"}, "fetch": {"url"}}
	assert.Equal(t, want, s.Upstreams[0].Remember)
	s, err = config.LoadServe([]string{"--config", path, "--upstream", "search=http://127.0.0.1:2/mcp"}, io.Discard)
	require.NoError(t, err)
	require.Len(t, s.Upstreams, 1)
	assert.Equal(t, want, s.Upstreams[0].Remember, "the flag keeps the file's remember")

	for _, bad := range []string{"[q]", "{query: q}", "{query: [\"\"]}", "{query: [[q]]}", "{\"\": [q]}"} {
		path, _ := writeConfig(t, "upstreams:\n  - {name: search, url: \"http://127.0.0.1:1/mcp\", remember: "+bad+"}\n")
		_, err := config.LoadFile(path)
		assert.Equal(t, []string{"line 2: upstreams[0]: remember: wrong kind of value"}, problems(t, err), "remember: %s", bad)
	}
}

// TestDecisionLogHistoryEntries: writing the history entries into the
// decision log is off unless set, and needs a decision log.
func TestDecisionLogHistoryEntries(t *testing.T) {
	t.Parallel()
	s, err := config.LoadServe([]string{"--decision-log", "/tmp/decisions.jsonl"}, io.Discard)
	require.NoError(t, err)
	assert.False(t, s.DecisionLog.HistoryEntries)
	s, err = config.LoadServe([]string{"--decision-log", "/tmp/decisions.jsonl", "--decision-log-history-entries"}, io.Discard)
	require.NoError(t, err)
	assert.True(t, s.DecisionLog.HistoryEntries)
	_, err = config.LoadServe([]string{"--decision-log-history-entries"}, io.Discard)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--decision-log-history-entries: needs decision_log (--decision-log)")
}
