package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestUnansweredLineIsAnError: a relay line with a round of no calls (or
// none measured) fails the table, naming the line; answered lines pass.
func TestUnansweredLineIsAnError(t *testing.T) {
	ok := &relayLine{name: "plain Go reverse proxy", results: []measurement{{calls: 10, rate: 100}, {calls: 10, rate: 90}}}
	require.NoError(t, unanswered([]*relayLine{ok}))
	none := &relayLine{name: "toolgate → HTTP upstream", revision: revisionSessions, results: []measurement{{calls: 10, rate: 100}, {}}}
	err := unanswered([]*relayLine{ok, none})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "2025-11-25 toolgate → HTTP upstream: answered no call in round 2")
	err = unanswered([]*relayLine{{name: "toolgate → stdio upstream"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "2026-07-28 (default) toolgate → stdio upstream: not measured")
}
