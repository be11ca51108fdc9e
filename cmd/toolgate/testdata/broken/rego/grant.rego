package toolgate.grant

granted := {"echo"} if {
	lookup_roles(input.caller.subject)
}
