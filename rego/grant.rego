# The grant decision: which tools a caller may see and call (docs/contract.md §4).
#
# Without a `granted` value the registry's base decision stands: rows without
# a section for every signed-in caller, rows with a section for the roles the
# section lists. This file only overrides it for contractors.
package toolgate.grant

# granted narrows what a contractor may use to the tools the base decision
# already grants that are read-only and are not URL drivers.
#
# It is a complete rule on purpose: for a caller without the `contractor` role
# (and for nobody, whose `input.caller` is null) the body does not hold, the
# rule is undefined, and the base decision stands. A partial set rule
# (`granted contains name if ...`) would always be defined and so would
# override for everyone, hiding every tool from callers it grants nothing.
#
# Only `readOnlyHint == true` counts as read-only: a missing annotation, or
# one that is not the boolean true, keeps the tool hidden. `annotations` are
# the ones the operator vouches for: a tool imported from an upstream keeps
# its own claims in `upstream_annotations`, which never count here, unless
# its upstream is configured with `trust_annotations: true` (docs/contract.md §15).
granted := {t.name |
	some t in input.tools
	t.base
	t.annotations.readOnlyHint == true
	not url_driver(t)
} if {
	"contractor" in input.caller.roles
}

# url_driver holds for a generic URL driver row: one that takes a URL and so
# reaches every page it can name, including pages behind hidden tools (docs/contract.md §7).
url_driver(t) if t.driver == "url"

# url_drivers_decided records that the reach of URL drivers was considered:
# `toolgate check` fails when a policy grants a URL driver without it.
#
# The decision for the bundled example: the only URL driver, execUrl, sits in
# the `reports` section, which only admins hold, and admins are granted every
# tool of the example anyway, so the driver reaches nothing they could not
# already use. Contractors never get it (see url_driver above). Revisit this
# when you add a URL driver or a section that admins do not hold.
url_drivers_decided := true
