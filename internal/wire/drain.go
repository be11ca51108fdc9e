package wire

import (
	"context"
	"errors"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// AnswerBeforeEOF returns a transport whose connection, once its input ends,
// reports the end only after every request already read has been answered.
// The go-sdk cancels the requests in flight as soon as a read fails, so a
// client that writes its requests and closes its end of a pipe (`printf ...
// | toolgate serve --stdio`) would otherwise get no answer at all. The wait
// ends early when the context the connection was made with is done (the
// server's Run ended), since go-sdk's Close waits for the reader and writes
// no answer once closing. A subscriptions/listen is a stream, answered
// only when it ends: it is not waited for. The binary's serve --stdio and
// the embedded Server's Serve wrap their transports in it.
func AnswerBeforeEOF(t mcp.Transport) mcp.Transport { return answerBeforeEOF{t} }

type answerBeforeEOF struct{ mcp.Transport }

func (t answerBeforeEOF) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &drainConn{Connection: c, done: ctx.Done(), pending: map[jsonrpc.ID]struct{}{}}, nil
}

type drainConn struct {
	mcp.Connection
	done <-chan struct{} // the Connect context's: the server stopped

	mu      sync.Mutex
	pending map[jsonrpc.ID]struct{} // calls read and not yet answered
	idle    chan struct{}           // closed when pending empties; nil while no one waits
}

func (c *drainConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err == nil {
		if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() && req.Method != "subscriptions/listen" {
			c.mu.Lock()
			c.pending[req.ID] = struct{}{}
			c.mu.Unlock()
		}
		return msg, nil
	}
	if errors.Is(err, io.EOF) {
		c.waitAnswered(ctx)
	}
	return nil, err
}

func (c *drainConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.mu.Lock()
		delete(c.pending, resp.ID)
		if len(c.pending) == 0 && c.idle != nil {
			close(c.idle)
			c.idle = nil
		}
		c.mu.Unlock()
	}
	return err
}

// waitAnswered returns once every call read has been answered, or ctx or
// the connection's context is done.
func (c *drainConn) waitAnswered(ctx context.Context) {
	c.mu.Lock()
	if len(c.pending) == 0 {
		c.mu.Unlock()
		return
	}
	if c.idle == nil {
		c.idle = make(chan struct{})
	}
	idle := c.idle
	c.mu.Unlock()
	select {
	case <-idle:
	case <-ctx.Done():
	case <-c.done:
	}
}
