package upstream_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/testkit/testserver"
	"github.com/toolgate/toolgate/methods"
	"github.com/toolgate/toolgate/toolcall"
	"github.com/toolgate/toolgate/upstream"
)

func ExampleParseFlag() {
	cfg, err := upstream.ParseFlag(`files=mcp-files --root "/srv/my docs"`)
	fmt.Printf("%s %q %v\n", cfg.Name, cfg.Command, err)
	cfg, err = upstream.ParseFlag("search=https://search.example.com/mcp")
	fmt.Println(cfg.Name, cfg.URL, err)
	// Output:
	// files ["mcp-files" "--root" "/srv/my docs"] <nil>
	// search https://search.example.com/mcp <nil>
}

func ExamplePool() {
	// An upstream MCP server over streamable HTTP.
	srv := testserver.New(testserver.Options{})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer ts.Close()

	pool, err := upstream.NewPool([]upstream.Config{{Name: "demo", URL: ts.URL, Import: true}}, nil)
	if err != nil {
		panic(err)
	}
	defer pool.Close()
	// Go tool methods first, then the upstreams: the adapter's methods.Set.
	methods := upstream.Chain(methods.Map{}, pool)

	// What a row with method upstream:demo/hello runs.
	m, _ := methods.Method("upstream:demo/hello")
	inv, _ := m.Bind([]toolcall.Arg{{Name: "name", Value: []byte(`"ann"`)}})
	res, err := inv(context.Background())
	fmt.Println(res.Content[0].(*mcp.TextContent).Text, err)

	// The rows an import adds (merge them with upstream.MergeRows).
	for _, row := range pool.ImportedRows(context.Background()) {
		fmt.Println(row.Name, row.Method, len(row.Arguments))
	}
	// Output:
	// hello, ann <nil>
	// demo.crash upstream:demo/crash 0
	// demo.echo upstream:demo/echo 10
	// demo.fail upstream:demo/fail 0
	// demo.hello upstream:demo/hello 1
	// demo.interact upstream:demo/interact 2
	// demo.slow upstream:demo/slow 1
}
