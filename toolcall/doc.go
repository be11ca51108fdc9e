// Package toolcall is the vocabulary a governed call is told in: who makes
// it (Caller), the step of the pipeline that decided it (Stage), how it
// ended (Outcome), who answered (the By constants) and why its arguments
// could not be bound (ArgumentError).
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
