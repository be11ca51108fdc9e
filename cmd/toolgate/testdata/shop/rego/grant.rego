package toolgate.grant

# Contractors get echo and the URL driver, and a name no row has.
granted := {"echo", "fetch", "echoo"} if {
	"contractor" in input.caller.roles
}

# A caller with the role "conflict" makes the two rules disagree: the
# decision fails.
granted := {"echo"} if {
	"conflict" in input.caller.roles
}

granted := {"getReward"} if {
	"conflict" in input.caller.roles
}

# url_drivers_decided is missing on purpose: check must fail.
