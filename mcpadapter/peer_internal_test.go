package mcpadapter

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/toolcall"
)

// TestPeerContextIsItsParentButForThePeer: the context a method runs with
// answers PeerOf with the call's Peer and everything else as its parent
// (values, deadline, cancellation, cause), and contexts made from it are
// cancelled with the parent.
func TestPeerContextIsItsParentButForThePeer(t *testing.T) {
	t.Parallel()
	type key struct{}
	parent, cancel := context.WithCancelCause(context.WithValue(context.Background(), key{}, "v"))
	caller := &toolcall.Caller{Subject: "alice"}
	req := &mcp.CallToolRequest{Session: &mcp.ServerSession{}}
	a := &Adapter{}
	ctx := a.withPeer(parent, req, caller, nil)

	assert.Nil(t, PeerOf(parent))
	p := PeerOf(ctx)
	require.NotNil(t, p)
	assert.Same(t, p, PeerOf(ctx), "one Peer per call")
	assert.Same(t, caller, p.Caller())
	assert.Same(t, req.Session, p.(*peer).ss)
	assert.Equal(t, "v", ctx.Value(key{}))
	assert.Equal(t, parent.Done(), ctx.Done())

	child, stop := context.WithCancel(ctx)
	defer stop()
	var after = make(chan struct{})
	context.AfterFunc(ctx, func() { close(after) })
	require.NoError(t, child.Err())
	cancel(assert.AnError)
	<-child.Done()
	<-after
	assert.ErrorIs(t, ctx.Err(), context.Canceled)
	assert.ErrorIs(t, context.Cause(child), assert.AnError)

	assert.Same(t, parent, a.withPeer(parent, &mcp.CallToolRequest{}, caller, nil), "no session, no Peer")
}
