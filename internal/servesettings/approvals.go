package servesettings

import (
	"errors"
	"net/url"
)

// DefaultMaxPending bounds the requests one requester (identity source
// and subject) may have pending at once.
const DefaultMaxPending = 20

// Approvals are the approval gate's settings of `toolgate serve`
// (docs/contract.md §13); approvals.Options embeds them. The zero value
// takes every default.
type Approvals struct {
	// Webhook, when set, is an http(s) URL each new approval request is
	// POSTed to as JSON (approvals.NewWebhook).
	Webhook string
	// MaxPending bounds the requests one requester may have pending;
	// zero is DefaultMaxPending, negative no bound.
	MaxPending int
}

// Validate reports what is wrong with Webhook (CheckWebhookURL); nil when
// it is unset or right.
func (s Approvals) Validate() error {
	if s.Webhook == "" {
		return nil
	}
	return CheckWebhookURL(s.Webhook)
}

// CheckWebhookURL reports what is wrong with a webhook's URL: it is an
// http:// or https:// URL with a host.
func CheckWebhookURL(v string) error {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("want an http:// or https:// URL")
	}
	return nil
}
