package toolgate.grant_test

test_broken if {
	x ==
}
