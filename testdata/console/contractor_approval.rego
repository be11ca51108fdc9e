# The browser test's extra call rule, served beside the bundled policies:
# a contractor's echo is held until an admin approves that exact call, so
# the test can hold a contractor's call, approve it in the console and see
# the retried call run once.
package toolgate.call

approval := {
	"reason": "A contractor's echo needs an admin's approval",
	"approvers": ["admin"],
	"ttl": "10m",
} if {
	"contractor" in input.caller.roles
	input.tool.name == "echo"
}
