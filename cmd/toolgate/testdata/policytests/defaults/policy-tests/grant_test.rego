package toolgate.grant_test

import data.toolgate.grant

test_contractor if grant.granted == {"echo"} with input as {"caller": {"roles": ["contractor"]}}

test_others if not grant.granted with input as {"caller": {"roles": ["admin"]}}
