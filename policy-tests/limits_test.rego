# Tests for rego/limits.rego: the costly tool is limited per caller.
package toolgate.limits_test

import data.toolgate.call

sleep := {
	"name": "sleep", "method": "demo.sleep", "section": null, "driver": null, "base": true,
	"arguments": [{"name": "ms", "type": "int", "required": true}],
	"annotations": {"readOnlyHint": true},
}

echo := {
	"name": "echo", "method": "demo.echo", "section": null, "driver": null, "base": true,
	"arguments": [{"name": "text", "type": "string", "required": true}],
	"annotations": {"readOnlyHint": true},
}

call_input(subject, row) := {
	"caller": {"subject": subject, "roles": ["manager"], "claims": {}},
	"tools": [echo, sleep],
	"request": {"method": "tools/call", "tool": row.name, "arguments": {}, "meta": {}},
	"tool": row,
}

test_sleep_is_limited_per_caller_a_minute_and_a_day if {
	call.limit == {
		{"key": "sleep/subject/alice", "max": 5, "per": "1m", "reason": "at most 5 sleep calls a minute per caller"},
		{"key": "sleep/subject/alice", "max": 100, "per": "24h", "reason": "at most 100 sleep calls a day per caller"},
	} with input as call_input("alice", sleep)
}

test_each_caller_has_a_counter_of_its_own if {
	alice := {l.key | some l in call.limit} with input as call_input("alice", sleep)
	bob := {l.key | some l in call.limit} with input as call_input("bob", sleep)
	alice == {"sleep/subject/alice"}
	bob == {"sleep/subject/bob"}
}

test_other_tools_are_not_limited if {
	count(call.limit) == 0 with input as call_input("alice", echo)
}
