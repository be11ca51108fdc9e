# Tests for rego/result.rego: credentials in tool output are redacted, a
# private key withholds the result.
package toolgate.result_test

import data.toolgate.result

result_input(texts) := {
	"caller": {"subject": "alice", "roles": ["manager"], "claims": {}},
	"tools": [],
	"request": {"method": "tools/call", "tool": "echo", "arguments": {}, "meta": {}},
	"tool": {"name": "echo"},
	"result": {
		"content": [{"type": "text", "text": t} | some t in texts],
		"isError": false,
	},
}

# matches is each redact pattern that matches s.
matches(s) := {p | some p in result.redact; regex.match(p, s)}

test_an_aws_access_key_id_is_redacted if {
	count(matches("key AKIAIOSFODNN7EXAMPLE in the output")) == 1
}

test_a_github_token_is_redacted if {
	count(matches("token ghp_abcdefghijklmnopqrstuvwxyz0123456789")) == 1
}

test_a_bearer_token_is_redacted if {
	count(matches("Authorization: Bearer eyJhbGciOiJSUzI1NiJ9.payload.sig")) == 1
}

test_ordinary_text_is_not_redacted if {
	count(matches("hello, AKIA is a prefix; ghp_short; bearer of news")) == 0
}

test_a_private_key_withholds_the_result if {
	result.deny == {"it holds a private key"} with input as result_input([
		"here:",
		"-----BEGIN RSA PRIVATE KEY-----\nMIIE...\n-----END RSA PRIVATE KEY-----",
	])
}

test_other_results_are_not_withheld if {
	count(result.deny) == 0 with input as result_input(["hello"])
}

test_only_text_items_are_read if {
	image := object.union(result_input([]), {"result": {
		"content": [{"type": "image", "mimeType": "image/png"}],
		"isError": false,
	}})
	count(result.deny) == 0 with input as image
}
