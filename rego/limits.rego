# Rate limits and quotas (docs/contract.md §18, docs/limits.md): evaluated
# with the call rules, once a call is accepted and nothing refused it.
# Counters live in the ledger's store, so replicas sharing it share them.
package toolgate.call

# sleep is the example's costly tool: a call holds a worker for up to a
# minute. Each caller may start 5 a minute, and 100 a day. Both limits
# count under one key per subject: a call is counted once, and a refused
# call is not counted at all.
limit contains {
	"key": sprintf("sleep/subject/%s", [input.caller.subject]),
	"max": 5,
	"per": "1m",
	"reason": "at most 5 sleep calls a minute per caller",
} if {
	input.tool.name == "sleep"
}

limit contains {
	"key": sprintf("sleep/subject/%s", [input.caller.subject]),
	"max": 100,
	"per": "24h",
	"reason": "at most 100 sleep calls a day per caller",
} if {
	input.tool.name == "sleep"
}
