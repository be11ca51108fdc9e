package console

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSlowSubscriberIsDropped(t *testing.T) {
	t.Parallel()
	a := NewActivity(4)
	_, slow := a.subscribe()
	backlog, fast := a.subscribe()
	assert.Empty(t, backlog)
	for i := range subscriberBuffer {
		a.Publish(Event{Tool: "t", DecisionID: string(rune('a' + i%26))})
		<-fast.ch // the fast one keeps up
	}
	assert.Equal(t, 2, a.Subscribers())
	a.Publish(Event{Tool: "one too many"}) // the slow one's buffer is full
	assert.Equal(t, 1, a.Subscribers())
	n := 0
	for range slow.ch { // closed after what it had buffered
		n++
	}
	assert.Equal(t, subscriberBuffer, n)
	it := <-fast.ch
	assert.Equal(t, "one too many", it.ev.Tool)

	// The ring keeps the latest 4, oldest first, numbered in order.
	b := a.Backlog()
	require.Len(t, b, 4)
	assert.Equal(t, uint64(subscriberBuffer+1), b[3].Seq)
	assert.Equal(t, uint64(subscriberBuffer-2), b[0].Seq)
	a.unsubscribe(fast)
	a.unsubscribe(slow) // already dropped: no double close
	assert.Zero(t, a.Subscribers())
}
