// Package childupstream gives tests stdio MCP upstreams that behave as
// real servers do when started: one that takes seconds before it reads
// stdin (an `npx -y` or `uvx` server fetching its package), one that
// ignores requests it does not know before initialize (as the Python
// SDK does), one that exits until a file exists (a server that comes up
// later). Each is the test binary itself, run again as the child, the
// way the go-sdk's own command tests run theirs: the package's TestMain
// calls Main first.
//
//	func TestMain(m *testing.M) {
//		childupstream.Main()
//		os.Exit(m.Run())
//	}
//
//	cfg := upstream.Settings{Name: "slow", Args: childupstream.Slow(3*time.Second), Import: true}
//
// Every child serves the same tools, prompt and resource (Tools, Prompt,
// Resource), so a test can say what a listing through toolgate must hold.
package childupstream

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What every child serves.
var (
	Tools    = []string{"echo", "whoami"}
	Prompt   = "greet"
	Resource = "child://readme"
)

// arg marks the command line of a child: the test binary, this word, the
// kind and its parameter.
const arg = "-childupstream"

// Slow is the command line of a child that sleeps d before it reads
// stdin, then serves.
func Slow(d time.Duration) []string { return command("slow", d.String()) }

// IgnoresUnknown is the command line of a child that drops every request
// but initialize and ping, unanswered, until it is initialized.
func IgnoresUnknown() []string { return command("ignore", "") }

// UpOnceExists is the command line of a child that exits at once, with a
// message on stderr, while the file path does not exist, and serves once
// it does.
func UpOnceExists(path string) []string { return command("gated", path) }

func command(kind, param string) []string {
	exe, err := os.Executable()
	if err != nil {
		panic(err)
	}
	return []string{exe, arg, kind, param}
}

// Main runs the child the command line names and exits; it returns at
// once in any other process.
func Main() {
	if len(os.Args) < 4 || os.Args[1] != arg {
		return
	}
	kind, param := os.Args[2], os.Args[3]
	var t mcp.Transport = &mcp.StdioTransport{}
	switch kind {
	case "slow":
		d, err := time.ParseDuration(param)
		if err != nil {
			fail(err)
		}
		time.Sleep(d)
	case "ignore":
		t = ignoring{t}
	case "gated":
		if _, err := os.Stat(param); err != nil {
			fail(fmt.Errorf("not up yet: %w", err))
		}
	default:
		fail(fmt.Errorf("unknown kind %q", kind))
	}
	if err := NewServer(kind).Run(context.Background(), t); err != nil {
		fail(err)
	}
	os.Exit(0)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "childupstream:", err)
	os.Exit(1)
}

// NewServer is the server every child runs: Tools (echo answers its text,
// whoami the server's name), Prompt and Resource.
func NewServer(name string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: name, Version: "v1"}, nil)
	type echoIn struct {
		Text string `json:"text"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "answers its text"}, func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "whoami", Description: "answers the server's name"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name}}}, nil, nil
	})
	s.AddPrompt(&mcp.Prompt{Name: Prompt, Description: "a greeting"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello"}}}}, nil
	})
	s.AddResource(&mcp.Resource{URI: Resource, Name: "readme", MIMEType: "text/plain"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "read me"}}}, nil
	})
	return s
}

// ignoring is a server transport whose connection drops, unanswered,
// every request but initialize and ping until initialize has come.
type ignoring struct{ mcp.Transport }

func (t ignoring) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &ignoringConn{Connection: c}, nil
}

type ignoringConn struct {
	mcp.Connection
	initialized atomic.Bool
}

func (c *ignoringConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		m, err := c.Connection.Read(ctx)
		if err != nil || c.initialized.Load() {
			return m, err
		}
		r, ok := m.(*jsonrpc.Request)
		if !ok || !r.IsCall() {
			return m, nil
		}
		if r.Method == "initialize" {
			c.initialized.Store(true)
		}
		if slices.Contains([]string{"initialize", "ping"}, r.Method) {
			return m, nil
		}
		fmt.Fprintf(os.Stderr, "childupstream: ignoring %s before initialize\n", r.Method)
	}
}
