package mcpadapter

import "github.com/toolgate/toolgate/hooks"

// prompt reports whether h's halves run on the call's goroutine for call.
func prompt(h *hooks.Hook, call *hooks.CallContext) bool {
	return h.Prompt || h.PromptFor != nil && h.PromptFor(call)
}
