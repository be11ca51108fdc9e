package toolgate.call

deny contains msg if {
	msg := no_such_function(input.tool.name)
}
