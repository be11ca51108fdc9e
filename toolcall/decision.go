package toolcall

import (
	"regexp"
	"time"
)

// Reason is one deny reason with every rule that produced it.
type Reason struct {
	Message string     `json:"message"`
	Rules   []Location `json:"rules,omitempty"`
}

// Approval is the value of data.toolgate.call.approval for one call: who
// must approve it, why, and how long a request or an approval lasts.
type Approval struct {
	// Reason is shown to the caller and the approvers; never empty.
	Reason string `json:"reason"`
	// Approvers are the roles that may approve; never empty, sorted.
	Approvers []string `json:"approvers"`
	// TTL bounds how long an undecided request and an unused approval
	// last; the engine's DefaultApprovalTTL when the rule names none.
	TTL time.Duration `json:"ttl"`
	// Rules are the rules that defined the approval.
	Rules []Location `json:"rules,omitempty"`
}

// CallDecision is what the toolgate.call rules decided for an accepted
// call (the engine's CallDecision, without its revision).
type CallDecision struct {
	// Deny holds every deny reason, sorted by message. Any reason refuses.
	Deny []Reason
	// Result, when not nil, is the JSON object that answers the call without
	// running its method (a CallToolResult). Refusing wins over a result.
	Result []byte
	// ResultRules are the rules that defined Result.
	ResultRules []Location
	// Approval, when not nil, says the call needs a person's approval
	// before it runs (docs/contract.md §13). Refusing wins over it; it wins
	// over a result.
	Approval *Approval
	// Confirm, when not "", is the question the calling user must confirm
	// (MCP elicitation) before the call runs.
	Confirm string
	// ConfirmRules are the rules that defined Confirm.
	ConfirmRules []Location
	// Limits are the rate limits and quotas the call must pass
	// (data.toolgate.call.limit, docs/contract.md §18), sorted by key.
	// Refusing wins over them; they win over an approval and a result.
	Limits []Limit
	// Err is the evaluation failure (the engine's *PolicyError); the call
	// then fails closed.
	Err error
}

// ResultDecision is what the result rules (data.toolgate.result,
// docs/contract.md §18) decided for one result of a method or upstream
// (the engine's ResultDecision, without its revision).
type ResultDecision struct {
	// Deny holds every reason to withhold the result, sorted by message.
	Deny []Reason
	// Redact are the regular expressions whose every match in the result's
	// text is replaced, sorted by their source; compiled once per revision.
	Redact []*regexp.Regexp
	// RedactRules are the rules that defined Redact.
	RedactRules []Location
	// Err is the evaluation failure (the engine's *PolicyError, also a
	// pattern that does not compile); the result is then withheld (fail
	// closed).
	Err error
}

// Revision is the consistent state of registry, policies and data a
// decision read, as plug-ins name it (the engine's *Revision is the one
// the adapter gives): its number within its engine, the hash of what it
// was built from, the source's label, and String, the name logs and
// audit records give it (the label, else number and short hash).
type Revision interface {
	Number() uint64
	Hash() string
	Label() string
	String() string
}
