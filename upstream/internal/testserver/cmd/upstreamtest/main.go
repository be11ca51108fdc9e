// Command upstreamtest serves the test upstream MCP server over stdio. Its
// crash tool exits the process with status 3; its slow tool writes
// SlowStartedLine to stderr once it is sleeping.
package main

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/upstream/internal/testserver"
)

func main() {
	s := testserver.New(testserver.Options{
		Crash:       func() { os.Exit(3) },
		SlowStarted: func(ms int) { fmt.Fprintln(os.Stderr, testserver.SlowStartedLine, ms) },
	})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Print(err)
	}
}
