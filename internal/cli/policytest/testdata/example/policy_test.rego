package example_test

import data.example

test_admin_allowed if example.allow with input as {"role": "admin"}

test_guest_refused if not example.allow with input as {"role": "guest"}
