# Call rules: evaluated once a call is accepted, before its method runs
# (docs/contract.md §4, §5 step 5). The input is the grant input plus `tool`, the resolved
# registry row.
package toolgate.call

# approval holds a destructive tool (`destructiveHint: true` in the row's
# annotations) until a person with the role `admin`, other than the caller,
# approves that exact call (same caller, tool and arguments); the approved
# call then runs once (docs/contract.md §13). Approvers decide with
# `toolgate approvals approve ID` or `POST /approvals/ID/approve`.
#
# The approval is a fact the server records: nothing the client sends (no
# `_meta` entry, no argument) approves a call.
#
# Only the boolean `true` counts as destructive: a missing annotation, or
# one that is not a boolean, needs no approval (the grant policy decides
# who sees such a tool at all).
approval := {
	"reason": sprintf("Tool '%s' is destructive and needs an admin's approval", [input.tool.name]),
	"approvers": ["admin"],
	"ttl": "1h",
} if {
	input.tool.annotations.destructiveHint == true
}
