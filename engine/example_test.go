package engine_test

import (
	"context"
	"fmt"
	"testing/fstest"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/toolcall"
)

func Example() {
	fsys := fstest.MapFS{
		"registry.yaml": {Data: []byte(`
sections:
  reports: { roles: [admin] }
tools:
  - { name: echo, method: demo.echo }
  - { name: report, method: demo.report, section: reports }
`)},
		"policies/grant.rego": {Data: []byte(`package toolgate.grant

granted := {"echo"} if "contractor" in input.caller.roles
`)},
	}
	e, err := engine.New(context.Background(), engine.Source{FS: fsys, Registry: "registry.yaml", Policies: "policies"})
	if err != nil {
		fmt.Println(err)
		return
	}
	rev := e.Current()
	for _, c := range []*toolcall.Caller{
		{Subject: "ann", Roles: []string{"admin"}},
		{Subject: "cid", Roles: []string{"admin", "contractor"}},
		nil,
	} {
		d := rev.Grant(context.Background(), c, engine.Request{Method: engine.MethodList})
		fmt.Println(d.Outcome, d.Granted())
	}
	// Output:
	// no_override [echo report]
	// override [echo]
	// nobody []
}
