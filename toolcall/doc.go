// Package toolcall is the vocabulary a governed call is told in: who makes
// it (Caller), the step of the pipeline that decided it (Stage), how it
// ended (Outcome), who answered (the By constants) and why its arguments
// could not be bound (ArgumentError); and the values a plug-in reads of how
// it was decided: where in a policy (Location), how the grant decision
// was reached (GrantOutcome), the bounded _meta (Meta), the rate limits
// (Limit), the caller's history (History), and what the toolgate.call and
// result rules decided (CallDecision, ResultDecision, with their Reasons
// and Approval), and the Revision they read. The engine names these as
// its own types (its *Revision is a Revision).
//
// It is a leaf: it imports neither the MCP go-sdk nor OPA, so an identity
// source, an observer or a plug-in can speak of callers and outcomes without
// linking the policy engine or the protocol binding. The engine evaluates
// policies for a *Caller; the adapter (package mcpadapter) runs the pipeline
// and fills its Record with these values.
//
//	c := &toolcall.Caller{Subject: "alice", Roles: []string{"manager"}}
//	_ = c
package toolcall
