# Tests for rego/call.rego: the approval gate on destructive tools.
package toolgate.call_test

import data.toolgate.call

reset_counter := {
	"name": "resetCounter", "method": "demo.count", "section": "reports", "driver": null, "base": true,
	"arguments": [{"name": "key", "type": "string", "required": true}],
	"annotations": {"readOnlyHint": false, "destructiveHint": true},
}

echo := {
	"name": "echo", "method": "demo.echo", "section": null, "driver": null, "base": true,
	"arguments": [{"name": "text", "type": "string", "required": true}],
	"annotations": {"readOnlyHint": true},
}

needs_approval := "Tool 'resetCounter' needs an approval: set _meta festi/approvedBy."

# call_input is the tools/call input document for row, with the bounded _meta.
call_input(row, meta) := {
	"caller": {"subject": "alice", "roles": ["admin"], "claims": {}},
	"tools": [echo, reset_counter],
	"request": {"method": "tools/call", "tool": row.name, "arguments": {}, "meta": meta},
	"tool": row,
}

# with_approver is call_input for resetCounter with festi/approvedBy set to v.
with_approver(v) := call_input(reset_counter, {"festi/runId": "r-1", "festi/approvedBy": v})

test_denies_destructive_tool_without_approval if {
	call.deny == {needs_approval} with input as call_input(reset_counter, {})
}

test_denies_destructive_tool_with_other_meta_only if {
	call.deny == {needs_approval} with input as call_input(reset_counter, {"festi/runId": "r-1"})
}

test_denies_empty_approver if {
	call.deny == {needs_approval} with input as with_approver("")
}

test_denies_blank_approver if {
	call.deny == {needs_approval} with input as with_approver(" \t")
}

test_denies_number_approver if {
	call.deny == {needs_approval} with input as with_approver(42)
}

test_denies_object_approver if {
	call.deny == {needs_approval} with input as with_approver({"name": "bob"})
}

test_denies_other_non_string_approvers if {
	call.deny == {needs_approval} with input as with_approver(null)
	call.deny == {needs_approval} with input as with_approver(true)
	call.deny == {needs_approval} with input as with_approver(["bob"])
}

test_allows_destructive_tool_with_approver if {
	count(call.deny) == 0 with input as with_approver("bob")
}

test_never_denies_non_destructive_tools if {
	count(call.deny) == 0 with input as call_input(echo, {})
	count(call.deny) == 0 with input as call_input(echo, {"festi/approvedBy": 42})
}

test_destructive_hint_needs_the_boolean_true if {
	no_annotations := object.union(echo, {"name": "plain", "annotations": {}})
	count(call.deny) == 0 with input as call_input(no_annotations, {})

	not_destructive := object.union(echo, {"name": "safe", "annotations": {"destructiveHint": false}})
	count(call.deny) == 0 with input as call_input(not_destructive, {})

	a_string := object.union(echo, {"name": "stringly", "annotations": {"destructiveHint": "true"}})
	count(call.deny) == 0 with input as call_input(a_string, {})
}

test_message_names_the_tool if {
	row := object.union(reset_counter, {"name": "dropTable"})
	call.deny == {"Tool 'dropTable' needs an approval: set _meta festi/approvedBy."} with input as call_input(row, {})
}

test_approved if {
	call.approved with input as with_approver("bob")
	not call.approved with input as with_approver("")
	not call.approved with input as with_approver(7)
	not call.approved with input as call_input(reset_counter, {})
}
