// Package approvals holds the calls that a policy's approval rule names
// until a person allowed to approve them does (docs/contract.md §13). A client cannot
// approve its own call: an approval is a fact the server records, in the
// ledger's store, from a caller with one of the rule's approver roles and a
// subject other than the requester's, and it lets exactly one identical
// call (same subject, tool and arguments) run.
//
// The Gate plugs into the adapter (mcpadapter.Options.Approvals); its
// Pending and Decide serve `toolgate approvals` and, through Handler, the
// HTTP endpoints:
//
//	gate := approvals.New(store, approvals.Options{})
//	a := mcpadapter.New(mcpadapter.Options{Revisions: eng, Methods: m, Approvals: gate})
//	hs := httpserve.New(httpserve.Options{Tokens: tokens, Approvals: gate.Handler(httpserve.RequestCaller),
//		MCPServer: func(transport []mcpadapter.Layer) *mcp.Server {
//			s, _ := a.NewServerWith(impl, nil, mcpadapter.Layers{Transport: transport})
//			return s
//		}})
//	go gate.RunPruner(ctx, 0) // removes expired requests after Options.Retention
//
// Confirmations (data.toolgate.call.confirm) need no store: the adapter
// asks the user through MCP elicitation.
//
// A Gate is safe for concurrent use, also by several processes sharing
// one store: every step of a request's life is one atomic store operation.
package approvals
