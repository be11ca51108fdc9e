# Tests for rego/grant.rego. Each test builds the input document of docs/contract.md §3
# from the rows of example/registry.yaml (as the server builds them) and the
# caller it is about.
package toolgate.grant_test

import data.toolgate.grant

# rows are the rows of the bundled registry exactly as the input document
# shows them: fixtures/bundled/data.json, generated from `toolgate explain
# --input` (go generate ./cmd/toolgate rewrites it after a registry change).
# Their `base` is an admin's; input_for sets it for the caller at hand.
rows := data.fixtures.bundled.tools

# The base decision of the bundled registry: the rows without a section
# (every signed-in caller), those in rewards (managers, admins), all (admins).
no_section := {"echo", "add", "fail", "inner", "count", "sleep"}

rewards := {"getReward", "price"}

all_tools := {r.name | some r in rows}

# input_for is a tools/list input for caller, where the base decision grants
# the rows named in base.
input_for(caller, base) := {
	"caller": caller,
	"tools": [object.union(r, {"base": r.name in base}) | some r in rows],
	"request": {"method": "tools/list", "meta": {}},
}

signed_in(roles) := {"subject": "alice", "roles": roles, "claims": {}}

test_contractor_gets_read_only_base_tools if {
	inp := input_for(signed_in(["contractor"]), no_section)
	grant.granted == {"echo", "add", "fail", "inner", "sleep"} with input as inp
}

test_contractor_override_keeps_section_tools_of_other_roles if {
	# A contractor who is also a manager keeps the read-only rewards tools.
	inp := input_for(signed_in(["manager", "contractor"]), no_section | rewards)
	grant.granted == {"echo", "add", "fail", "inner", "sleep", "getReward", "price"} with input as inp
}

test_contractor_never_gets_url_drivers if {
	# An admin contractor is base-granted everything, execUrl included, and
	# execUrl is annotated read-only: it stays hidden because it is a URL driver.
	inp := input_for(signed_in(["admin", "contractor"]), all_tools)
	granted := grant.granted with input as inp
	not "execUrl" in granted
	not "resetCounter" in granted
	not "count" in granted
	granted == {"echo", "add", "fail", "inner", "sleep", "getReward", "price"}
}

test_contractor_never_gets_what_the_base_decision_refuses if {
	# The override narrows, it never widens: read-only rows outside the base
	# decision stay hidden.
	inp := input_for(signed_in(["contractor"]), {"echo"})
	grant.granted == {"echo"} with input as inp
}

test_contractor_without_base_tools_gets_an_empty_override if {
	# Defined and empty: an override that hides everything.
	inp := input_for(signed_in(["contractor"]), set())
	grant.granted == set() with input as inp
}

test_read_only_needs_the_boolean_true if {
	inp := {
		"caller": signed_in(["contractor"]),
		"tools": [
			{"name": "missing", "method": "m", "section": null, "driver": null, "base": true, "arguments": [], "annotations": {}},
			{"name": "string", "method": "m", "section": null, "driver": null, "base": true, "arguments": [], "annotations": {"readOnlyHint": "true"}},
			{"name": "false", "method": "m", "section": null, "driver": null, "base": true, "arguments": [], "annotations": {"readOnlyHint": false}},
			{"name": "yes", "method": "m", "section": null, "driver": null, "base": true, "arguments": [], "annotations": {"readOnlyHint": true}},
		],
		"request": {"method": "tools/list", "meta": {}},
	}
	grant.granted == {"yes"} with input as inp
}

test_an_upstream_saying_read_only_does_not_count if {
	# An imported row whose upstream declares readOnlyHint (docs/contract.md §15): the
	# hint is in upstream_annotations; annotations holds it only when the
	# operator trusts the upstream (trust_annotations: true).
	inp := {
		"caller": signed_in(["contractor"]),
		"tools": [
			{"name": "up.untrusted", "method": "upstream:up/untrusted", "section": "upstream:up", "driver": null, "base": true, "arguments": [], "annotations": {}, "upstream": "up", "upstream_annotations": {"readOnlyHint": true}},
			{"name": "up.trusted", "method": "upstream:up/trusted", "section": "upstream:up", "driver": null, "base": true, "arguments": [], "annotations": {"readOnlyHint": true}, "upstream": "up", "upstream_annotations": {"readOnlyHint": true}},
		],
		"request": {"method": "tools/list", "meta": {}},
	}
	grant.granted == {"up.trusted"} with input as inp
}

test_no_override_for_other_roles if {
	not grant.granted with input as input_for(signed_in(["manager"]), no_section | rewards)
	not grant.granted with input as input_for(signed_in(["admin"]), all_tools)
}

test_no_override_for_a_caller_without_roles if {
	not grant.granted with input as input_for(signed_in([]), no_section)
}

test_no_override_for_a_role_that_only_contains_contractor if {
	# Roles are compared whole.
	not grant.granted with input as input_for(signed_in(["contractors", "subcontractor"]), no_section)
}

test_no_override_for_nobody if {
	# toolgate never asks the grant for nobody, but a policy must not
	# override for it either.
	not grant.granted with input as input_for(null, set())
}

test_url_driver if {
	grant.url_driver({"name": "execUrl", "driver": "url"})
	not grant.url_driver({"name": "echo", "driver": null})
	not grant.url_driver({"name": "other", "driver": "other"})
}

test_url_drivers_decided if {
	grant.url_drivers_decided == true
}
