package bundle_test

import (
	"bytes"
	"context"
	"fmt"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/internal/runtime/bundle"
)

// A bundle of the bundled example, built, read back and served by an
// engine: the manifest revision names the revision.
func ExampleBuild() {
	ctx := context.Background()
	var buf bytes.Buffer
	if err := bundle.Build(ctx, &buf, toolgate.Source("", ""), bundle.BuildOptions{Revision: "v42"}); err != nil {
		panic(err)
	}
	b, err := bundle.Read(&buf, nil) // nil: no signature to verify
	if err != nil {
		panic(err)
	}
	src, err := bundle.ToSource(&b)
	if err != nil {
		panic(err)
	}
	eng, err := engine.New(ctx, src)
	if err != nil {
		panic(err)
	}
	fmt.Println(eng.Current(), len(eng.Current().Registry().Tools), eng.Current().PolicyFiles())
	// Output: v42 10 [call.rego grant.rego limits.rego result.rego]
}
