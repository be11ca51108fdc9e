package audit_test

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/hooks/audit"
	"github.com/toolgate/toolgate/toolcall"
)

// NewRecord is what the hook writes for one call: the arguments only as a
// hash, the bounded _meta as sent, and the rule (file:line) behind each
// deny reason.
func ExampleNewRecord() {
	call := &hooks.CallContext{
		DecisionID: "4f2a",
		Name:       "getReward",
		Method:     "demo.getReward",
		Arguments:  json.RawMessage(`{"idReward": 7}`),
		Meta:       engine.BoundMeta(json.RawMessage(`{"festi/runId":"r-1"}`)),
		Caller:     &toolcall.Caller{Subject: "alice"},
		Start:      time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC),
	}
	rule := toolcall.Location{File: "rego/call.rego", Row: 9, Col: 1}
	end := &hooks.Record{
		Stage:    toolcall.StageDenied,
		Outcome:  toolcall.OutcomeDenied,
		Grant:    hooks.GrantRecord{Outcome: engine.NoOverride},
		Denials:  []hooks.Denial{{Reason: "Closed on Sundays.", Rules: []toolcall.Location{rule}}},
		Duration: 1500 * time.Microsecond,
	}
	line, _ := json.Marshal(audit.NewRecord(call, end))
	fmt.Println(string(line))
	// Output: {"decision_id":"4f2a","timestamp":"2026-11-30T09:00:00Z","subject":"alice","tool":"getReward","method":"demo.getReward","outcome":"denied","reason":"Closed on Sundays.","error":"","duration_ms":1.5,"revision":"","meta":{"festi/runId":"r-1"},"arguments_sha256":"191cc4f65632c937c5d62a985bcee2eea37a148a226fbded5489d57bdbcb1696","stage":"denied","grant":"no_override","rules":["rego/call.rego:9"],"denials":[{"reason":"Closed on Sundays.","rules":["rego/call.rego:9"]}]}
}
