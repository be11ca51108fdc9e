package toolgate.grant_test

import data.toolgate.grant

test_contractor if grant.granted == {"echo"} with input as {"caller": {"roles": ["contractor"]}}

test_contractor_gets_add if grant.granted == {"echo", "add"} with input as {"caller": {"roles": ["contractor"]}}
