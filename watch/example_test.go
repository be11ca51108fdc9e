package watch_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/toolcall"
	"github.com/toolgate/toolgate/watch"
)

// Run reloads the engine when an editor saves a policy.
func ExampleRun() {
	dir, err := os.MkdirTemp("", "toolgate-watch")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	src := engine.Source{Registry: filepath.Join(dir, "registry.yaml"), Policies: filepath.Join(dir, "rego")}
	_ = os.Mkdir(src.Policies, 0o755)
	_ = os.WriteFile(src.Registry, []byte("tools:\n  - { name: echo, method: demo.echo }\n  - { name: add, method: demo.add }\n"), 0o644)
	grant := filepath.Join(src.Policies, "grant.rego")
	_ = os.WriteFile(grant, []byte("package toolgate.grant\n\ngranted := {\"echo\"}\n"), 0o644)

	e, err := engine.New(context.Background(), src)
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reloaded := make(chan *engine.Revision, 1)
	go watch.Run(ctx, e, watch.Options{OnReload: func(_, rev *engine.Revision) { reloaded <- rev }})

	ann := &toolcall.Caller{Subject: "ann"}
	list := engine.Request{Method: engine.MethodList}
	fmt.Println(e.Current().Number(), e.Current().Grant(ctx, ann, list).Granted())

	// An editor saves: write a temporary file, rename it over.
	_ = os.WriteFile(grant+".tmp", []byte("package toolgate.grant\n\ngranted := {\"add\"}\n"), 0o644)
	_ = os.Rename(grant+".tmp", grant)
	rev := <-reloaded
	fmt.Println(rev.Number(), rev.Grant(ctx, ann, list).Granted())
	fmt.Println(e.Status().LastError == "")
	// Output:
	// 1 [echo]
	// 2 [add]
	// true
}
