package approvals

// Settings are the approval gate's settings of `toolgate serve`
// (docs/contract.md §13). The zero value takes every default.
type Settings struct {
	// Webhook, when set, is an http(s) URL each new approval request is
	// POSTed to as JSON (NewWebhook).
	Webhook string
	// MaxPending bounds the requests one requester may have pending
	// (Options.MaxPending); zero is DefaultMaxPending.
	MaxPending int
}

// Validate reports what is wrong with Webhook (CheckWebhookURL); nil when
// it is unset or right.
func (s Settings) Validate() error {
	if s.Webhook == "" {
		return nil
	}
	return CheckWebhookURL(s.Webhook)
}
