package backend

//lint:file-ignore SA1019 logging, sampling and roots are deprecated from protocol revision 2026-07-28 on; earlier revisions have them, and toolgate keeps what the server behind it does

import (
	"context"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/toolcall"
)

// Peer is the client of the tools/call being served, as the method that
// runs it sees it (docs/contract.md §16, docs/relay.md): a method reports
// progress and logs to that client, and asks it to sample, elicit or list
// its roots, through the Peer of its call's context (PeerOf). Everything
// sent through a Peer goes to the calling client only, on the session the
// call came on; none of it is part of the call's result, which hooks,
// approvals and audit see as before. What it sends passes the policy's
// result rules first (docs/limits.md): a message they withhold is not
// sent, and redact rewrites the strings of what is.
//
// A Peer is valid while its call runs; it is safe for concurrent use.
type Peer interface {
	// Caller is the caller of the call, as the policy saw it.
	Caller() *toolcall.Caller
	// Owner is the key of the caller's identity, the identity source and
	// the subject ("token:alice", "jwt:alice"), as HTTP sessions are bound
	// to it; for a caller without one (stdio, a CallerFunc of the library)
	// it is "caller:" and the subject. Upstream sessions are keyed by it.
	Owner() string
	// ProtocolVersion is the protocol revision of the calling client's
	// session.
	ProtocolVersion() string
	// Capabilities are the capabilities the calling client declared; nil
	// when it declared none.
	Capabilities() *mcp.ClientCapabilities
	// ProgressToken is the progressToken the client sent with the call;
	// nil when it asked for no progress.
	ProgressToken() any
	// InputResponses and RequestState are what a client of the 2026-07-28
	// revision sent back after an input-required result (SEP-2322).
	InputResponses() mcp.InputResponseMap
	RequestState() string
	// RelayedRequestState is the requestState of an upstream that the
	// client brought back: the one SealRequestState sealed for this
	// caller, tool and arguments, opened; "" when the client brought none
	// of those (a state that is not toolgate's is not handed on).
	RelayedRequestState() string
	// SealRequestState seals an upstream's requestState for the client of
	// this call: bound to the caller, the tool and its arguments, for a
	// while, and integrity-protected (docs/relay.md, "Revisions
	// bridged").
	SealRequestState(state string) string
	// MultiRoundTrip reports whether the calling client takes
	// input-required results (2026-07-28) rather than requests of its own.
	MultiRoundTrip() bool
	// LogLevel is the level the client asked for: on the 2026-07-28
	// revision, which has no logging/setLevel, the one in the call's
	// _meta; otherwise the one it set with logging/setLevel on its
	// session. ok is false when it asked for none.
	LogLevel() (level mcp.LoggingLevel, ok bool)
	// Progress sends the client a notifications/progress for the call,
	// when it asked for progress (sent a progressToken); it does nothing
	// otherwise. total 0 is unknown.
	Progress(ctx context.Context, progress, total float64, message string) error
	// NotifyProgress sends a notifications/progress as is (the relay's; a
	// Go method calls Progress). Its token must be the call's.
	NotifyProgress(ctx context.Context, params *mcp.ProgressNotificationParams) error
	// Log sends the client a notifications/message: data at level, from
	// logger (may be ""). A client that set a level with logging/setLevel
	// gets the messages at that level or above; one that set none gets
	// every message (docs/contract.md §16).
	Log(ctx context.Context, level mcp.LoggingLevel, logger string, data any) error
	// LogMessage is Log with the notification's params as they are (the
	// relay's).
	LogMessage(ctx context.Context, params *mcp.LoggingMessageParams) error
	// CreateMessage asks the client to sample (sampling/createMessage),
	// and waits for its answer. A client that did not declare sampling is
	// not asked: ErrNoPeer.
	CreateMessage(ctx context.Context, params *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error)
	// Elicit asks the client's user for input (elicitation/create), and
	// waits for the answer. A client that did not declare elicitation is
	// not asked: ErrNoPeer.
	Elicit(ctx context.Context, params *mcp.ElicitParams) (*mcp.ElicitResult, error)
	// ListRoots asks the client for its roots (roots/list). A client that
	// did not declare roots is not asked: ErrNoPeer.
	ListRoots(ctx context.Context) (*mcp.ListRootsResult, error)
}

// ErrNoPeer is returned by a Peer's requests when the calling client
// cannot be asked: it did not declare the capability.
var ErrNoPeer = errors.New("mcpadapter: the calling client did not declare this capability")

// PeerKey is the context key a call's Peer is found under: the context
// a method runs with answers it with the Peer.
type PeerKey struct{}

// PeerOf returns the Peer of the call ctx runs, nil outside a served call
// (a dry run, a call made without a session).
func PeerOf(ctx context.Context) Peer {
	p, _ := ctx.Value(PeerKey{}).(Peer)
	return p
}
