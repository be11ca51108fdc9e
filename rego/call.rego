# Call rules: evaluated once a call is accepted, before its method runs
# (SPEC §4, §5 step 5). The input is the grant input plus `tool`, the resolved
# registry row.
package toolgate.call

# deny refuses a destructive tool (`destructiveHint: true` in the row's
# annotations) unless the request names who approved it in _meta
# `festi/approvedBy`.
deny contains msg if {
	input.tool.annotations.destructiveHint == true
	not approved
	msg := sprintf("Tool '%s' needs an approval: set _meta festi/approvedBy.", [input.tool.name])
}

# approved holds when _meta `festi/approvedBy` is a string that is not blank.
#
# _meta is client-supplied and is not interpreted before it reaches a policy
# (SPEC §3): the entry may be a number, an object, null or missing, so its type
# is checked before its value is read.
approved if {
	approver := input.request.meta["festi/approvedBy"]
	is_string(approver)
	trim_space(approver) != ""
}
