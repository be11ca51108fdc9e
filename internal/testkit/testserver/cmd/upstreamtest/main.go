// Command upstreamtest serves the test upstream MCP server over stdio, or
// with -http ADDR over streamable HTTP (it prints "serving http://ADDR/mcp"
// once it listens). Its crash tool exits the process with status 3; its
// slow tool writes SlowStartedLine to stderr once it is sleeping, and
// SlowCancelledLine when cancelled;
// -stage-file FILE sets testserver.Options.StageFile.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/testkit/testserver"
)

func main() {
	stageFile := flag.String("stage-file", "", "follow the stage kept in `FILE` (testserver.Options.StageFile)")
	env := flag.Bool("env-tool", false, "add the tool env (testserver.Options.Env)")
	addr := flag.String("http", "", "serve streamable HTTP at `ADDR` instead of stdio")
	flag.Parse()
	s := testserver.New(testserver.Options{
		Crash:         func() { os.Exit(3) },
		SlowStarted:   func(ms int) { fmt.Fprintln(os.Stderr, testserver.SlowStartedLine, ms) },
		SlowCancelled: func(ms int) { fmt.Fprintln(os.Stderr, testserver.SlowCancelledLine, ms) },
		StageFile:     *stageFile,
		Env:           *env,
	})
	if *addr == "" {
		if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			log.Print(err)
		}
		return
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("serving http://%s/mcp\n", ln.Addr())
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	log.Fatal(http.Serve(ln, h))
}
