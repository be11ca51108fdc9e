package inspect_test

import (
	"context"
	"fmt"
	"os"
	"testing/fstest"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/internal/inspect"
	"github.com/toolgate/toolgate/toolcall"
)

// exampleFS is a registry with a URL driver every signed-in caller gets,
// and a policy that hides the reports from contractors.
var exampleFS = fstest.MapFS{
	"registry.yaml": {Data: []byte(`
sections:
  reports: { roles: [admin] }
tools:
  - { name: echo, method: demo.echo }
  - { name: fetch, method: demo.fetch, driver: url }
  - { name: report, method: demo.report, section: reports }
`)},
	"rego/grant.rego": {Data: []byte(`package toolgate.grant

granted := {"echo", "fetch"} if "contractor" in input.caller.roles
`)},
}

func ExampleCheck() {
	rep := inspect.Check(context.Background(), inspect.CheckOptions{
		Source:   engine.Source{FS: exampleFS, Registry: "registry.yaml", Policies: "rego"},
		RoleSets: [][]string{{"contractor"}},
	})
	for _, f := range rep.Errors {
		fmt.Println("error", f.Code, f.Tools)
	}
	for _, f := range rep.Warnings {
		fmt.Println("warning", f.Code, f.Tools)
	}
	fmt.Println("ok:", rep.OK())
	// Output:
	// error url_drivers_undecided [fetch]
	// warning url_driver_reach [report]
	// ok: false
}

func ExampleExplain() {
	e, err := engine.New(context.Background(), engine.Source{FS: exampleFS, Registry: "registry.yaml", Policies: "rego"})
	if err != nil {
		fmt.Println(err)
		return
	}
	x := inspect.Explain(context.Background(), inspect.ExplainOptions{
		Revision: e.Current(),
		Caller:   &toolcall.Caller{Subject: "carol", Roles: []string{"contractor"}},
		Tool:     "report",
	})
	fmt.Println(x.Mode, x.OverrideRules, x.Granted)
	fmt.Println(x.Call.Stage, x.Call.Answer)
	x.Call = nil
	x.Revision = "…"
	_ = x.WriteText(os.Stdout)
	// Output:
	// override [rego/grant.rego:3] [echo fetch]
	// unknown_tool Error: Unknown tool 'report'.
	// revision  …
	// caller    carol (roles: contractor)
	// decision  override: exactly the policy's granted set (rego/grant.rego:3)
	// evaluated once per caller, then memoised: the rule behind granted reads only input.caller, input.tools and data, and calls no non-deterministic built-in
	//
	//   tool    base     granted  why (base)
	//   echo    yes      yes      no section: every signed-in caller
	//   fetch   yes      yes      no section: every signed-in caller; driver: url
	//   report  no       no       section reports lists only admin
	//
	// granted   echo, fetch
}
