package toolgate.call

deny contains msg if {
	input.tool.annotations.destructiveHint == true
	not approved
	msg := sprintf("Tool '%s' needs an approval.", [input.tool.name])
}

deny contains "Resetting is closed on Sundays." if {
	input.tool.name == "resetCounter"
	input.request.meta["festi/day"] == "sunday"
}

result := {"content": [{"type": "text", "text": "quota: 3 calls left"}], "isError": false} if {
	input.tool.name == "quota"
}

approved if is_string(input.request.meta["festi/approvedBy"])
