# Contractors may read rewards, never delete them.
package toolgate.call

deny contains "Contractors cannot delete rewards." if {
	input.request.tool == "deleteReward"
	"contractor" in input.caller.roles
}
