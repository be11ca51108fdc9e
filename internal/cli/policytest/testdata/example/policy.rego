package example

allow if input.role == "admin"

allow if input.role == "auditor"
