package toolgate.grant

granted := {"echo"} if "contractor" in input.caller.roles
