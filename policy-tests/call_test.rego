# Tests for rego/call.rego: destructive tools wait for an admin's approval.
package toolgate.call_test

import data.toolgate.call

# row is the bundled registry's row name exactly as the input document
# shows it (fixtures/bundled/data.json, generated from `toolgate explain
# --input`).
row(name) := r if {
	some r in data.fixtures.bundled.tools
	r.name == name
}

reset_counter := row("resetCounter")

echo := row("echo")

# call_input is the tools/call input document for row, with the bounded _meta.
call_input(row, meta) := {
	"caller": {"subject": "alice", "roles": ["admin"], "claims": {}},
	"tools": [echo, reset_counter],
	"request": {"method": "tools/call", "tool": row.name, "arguments": {"key": "k"}, "meta": meta},
	"tool": row,
}

admin_approval(name) := {
	"reason": sprintf("Tool '%s' is destructive and needs an admin's approval", [name]),
	"approvers": ["admin"],
	"ttl": "1h",
}

test_destructive_tool_needs_an_admin_approval if {
	call.approval == admin_approval("resetCounter") with input as call_input(reset_counter, {})
}

test_the_reason_names_the_tool if {
	row := object.union(reset_counter, {"name": "dropTable"})
	call.approval.reason == "Tool 'dropTable' is destructive and needs an admin's approval" with input as call_input(row, {})
}

# A client cannot approve its own call: _meta festi/approvedBy (the old
# client-written approval) changes nothing.
test_client_meta_approves_nothing if {
	call.approval == admin_approval("resetCounter") with input as call_input(reset_counter, {"festi/approvedBy": "bob"})
	call.approval == admin_approval("resetCounter") with input as call_input(reset_counter, {"festi/approvedBy": true})
}

test_nothing_is_denied_or_answered if {
	not call.deny with input as call_input(reset_counter, {})
	not call.result with input as call_input(reset_counter, {})
}

test_non_destructive_tools_need_no_approval if {
	not call.approval with input as call_input(echo, {})
	not call.approval with input as call_input(echo, {"festi/approvedBy": 42})
}

test_destructive_hint_needs_the_boolean_true if {
	no_annotations := object.union(echo, {"name": "plain", "annotations": {}})
	not call.approval with input as call_input(no_annotations, {})

	not_destructive := object.union(echo, {"name": "safe", "annotations": {"destructiveHint": false}})
	not call.approval with input as call_input(not_destructive, {})

	a_string := object.union(echo, {"name": "stringly", "annotations": {"destructiveHint": "true"}})
	not call.approval with input as call_input(a_string, {})
}
