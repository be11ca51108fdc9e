package mcpadapter

import (
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolgate/toolgate/toolcall"
)

// Every exact answer a governed tools/call can get from toolgate itself
// (docs/contract.md §5, §13) is written here, once: the adapter answers with them,
// `explain` predicts with them, and the tests pin them to SPEC's text.

// The fixed answers of docs/contract.md §5.
const (
	// AnswerNameRequired: step 1, the name is missing or neither a string
	// nor an integer.
	AnswerNameRequired = "Error: Tool name is required."
	// AnswerNotVerified: step 3, the grant decision failed.
	AnswerNotVerified = "Error: Tool access could not be verified."
	// AnswerInternal: a before hook, a toolgate.call rule or the method
	// failed, or the arguments could not be bound for another reason than
	// an argument's. Its text is written once, in toolcall, where
	// ArgumentError renders it too.
	AnswerInternal = toolcall.AnswerInternal
)

// AnswerUnknownTool is the answer for nobody (step 2), for a hidden tool and
// for a name no row has (step 4): byte for byte the same.
func AnswerUnknownTool(name string) string { return fmt.Sprintf("Error: Unknown tool '%s'.", name) }

// The exact answers of docs/contract.md §13.
const (
	// MsgNotConfirmed answers a call whose confirmation the user declined
	// or cancelled.
	MsgNotConfirmed = "The call was not confirmed."
	// MsgCannotConfirm answers a call that needs a confirmation from a
	// client without the elicitation capability.
	MsgCannotConfirm = "This tool needs a confirmation your client cannot show."
)

// ApprovalRequired is the answer to a call held for an approval.
func ApprovalRequired(reason, id string) string {
	return fmt.Sprintf("Approval required: %s (approval %s). Call again once it is approved.", reason, id)
}

// ApprovalRefused is the answer, given once, to the call whose request an
// approver refused.
func ApprovalRefused(id string) string { return fmt.Sprintf("Approval %s was refused.", id) }

// TextResult is a CallToolResult with one text content item.
func TextResult(text string, isError bool) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: isError}
}
