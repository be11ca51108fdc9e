package hooks_test

import (
	"context"
	"fmt"

	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/toolcall"
)

// A before hook refuses a call; the Record an after hook then gets says
// who refused, with every reason.
func ExampleDeny() {
	readOnly := hooks.Hook{Name: "read-only", Prompt: true,
		Before: func(_ context.Context, call *hooks.CallContext) (hooks.Verdict, error) {
			if call.Method == "files.delete" {
				return hooks.Deny("The files are read-only."), nil
			}
			return hooks.Allow(), nil
		}}
	v, _ := readOnly.Before(context.Background(), &hooks.CallContext{Name: "rm", Method: "files.delete"})
	fmt.Println(v.Denied, v.Reason)

	rule := toolcall.Location{File: "rego/call.rego", Row: 9}
	rec := &hooks.Record{
		Stage:    toolcall.StageDenied,
		Outcome:  toolcall.OutcomeDenied,
		Answerer: hooks.Answerer{Kind: toolcall.ByHook, Name: readOnly.Name},
		Denials: []hooks.Denial{
			{Reason: v.Reason, Hook: readOnly.Name},
			{Reason: "Not on Sundays.", Rules: []toolcall.Location{rule}},
		},
	}
	fmt.Println(rec.AnsweredBy(), rec.Reasons(), rec.DecidingRules(), rec.Failed())
	// Output:
	// true The files are read-only.
	// read-only [The files are read-only. Not on Sundays.] [rego/call.rego:9] false
}
