# Result rules (docs/contract.md §18, docs/limits.md): evaluated on what a
# tool method or upstream returned, with the call's input plus
# `input.result` (`content`: text items' text, other items' type and MIME
# type; `structuredContent`; `isError`).
package toolgate.result

# redact hides what looks like a credential wherever a tool prints it:
# every match in text content and in string values of structuredContent
# becomes "[redacted]". The patterns are RE2 constants, compiled once when
# the policies load (an invalid one refuses the load and names it).
redact contains `AKIA[0-9A-Z]{16}` # an AWS access key id

redact contains `gh[pousr]_[A-Za-z0-9]{36}` # a GitHub token

redact contains `(?i)bearer [a-z0-9._~+/-]{20,}=*` # a bearer token in a header

# deny withholds a result that carries a private key: redacting one line of
# it would leave the rest.
deny contains "it holds a private key" if {
	some item in input.result.content
	item.type == "text"
	regex.match(`-----BEGIN [A-Z ]*PRIVATE KEY-----`, item.text)
}
