package console

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSlowSubscriberIsDropped: a subscriber that fell further behind than
// the ring holds is told so (its stream ends, the page reconnects); one
// that keeps up reads every event in order.
func TestSlowSubscriberIsDropped(t *testing.T) {
	t.Parallel()
	a := NewActivity(4)
	_, slow := a.subscribe(0)
	backlog, fast := a.subscribe(0)
	assert.Empty(t, backlog)
	for i := range 10 {
		a.Publish(Event{Tool: "t", DecisionID: string(rune('a' + i))})
		<-fast.wake
		evs, _, behind := a.since(fast, true)
		require.False(t, behind)
		require.Len(t, evs, 1)
		assert.Equal(t, uint64(i+1), evs[0].Seq)
	}
	<-slow.wake
	_, _, behind := a.since(slow, true)
	assert.True(t, behind, "10 events behind a ring of 4")
	a.unsubscribe(fast)
	a.unsubscribe(slow)
	assert.Zero(t, a.Subscribers())

	// The ring keeps the latest 4, oldest first, numbered in order.
	b := a.Backlog()
	require.Len(t, b, 4)
	assert.Equal(t, uint64(10), b[3].Seq)
	assert.Equal(t, uint64(7), b[0].Seq)
}

// TestSubscribersCostNothingUntilWoken: a subscription holds no buffer
// (the ring is shared), publishing wakes every subscriber with one
// channel, and the cap refuses one more.
func TestSubscribersCostNothingUntilWoken(t *testing.T) {
	t.Parallel()
	a := NewActivity(8)
	subs := make([]*subscriber, 3)
	for i := range subs {
		_, subs[i] = a.subscribe(3)
		require.NotNil(t, subs[i])
	}
	_, over := a.subscribe(3)
	assert.Nil(t, over, "the cap refuses a fourth")
	a.approvalsChanged()
	for _, s := range subs {
		<-s.wake
		evs, queued, behind := a.since(s, false)
		assert.Empty(t, evs)
		assert.True(t, queued)
		assert.False(t, behind)
	}
}
