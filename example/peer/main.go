// Command peer is an MCP server whose Go method talks to its calling
// client while it runs, through its call's mcpadapter.Peer
// (docs/relay.md): it reports progress, logs, asks the user a question
// (elicitation), asks the client's model for text (sampling) and lists the
// client's roots. toolgate governs the call as any other: the policy
// decides, the audit trail records it; what the method sends the client is
// not part of the result. It serves stdio, for the caller --as:
//
//	go run ./example/peer --as ann
package main

//lint:file-ignore SA1019 logging, sampling and roots are deprecated from protocol revision 2026-07-28 on; earlier revisions have them, and toolgate keeps what the server behind it does

import (
	"context"
	"embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/identity"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/methods"
)

//go:embed registry.yaml policy
var builtin embed.FS

// draft is the notes.draft method.
func draft(ctx context.Context, a struct {
	Topic string `json:"topic"`
}) (string, error) {
	peer := mcpadapter.PeerOf(ctx)
	if peer == nil {
		return "", errors.New("not a served call")
	}
	_ = peer.Progress(ctx, 1, 3, "asking for the tone")
	_ = peer.Log(ctx, "info", "notes", "drafting a note on "+a.Topic)

	tone := "neutral"
	if ans, err := peer.Elicit(ctx, &mcp.ElicitParams{Message: "Which tone for the note on " + a.Topic + "?",
		RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"tone": map[string]any{"type": "string"}}}}); err == nil && ans.Action == "accept" {
		if s, ok := ans.Content["tone"].(string); ok {
			tone = s
		}
	}
	_ = peer.Progress(ctx, 2, 3, "asking the model")

	text := "(no model)"
	if res, err := peer.CreateMessage(ctx, &mcp.CreateMessageWithToolsParams{MaxTokens: 100,
		Messages: []*mcp.SamplingMessageV2{{Role: "user", Content: []mcp.Content{&mcp.TextContent{Text: "A " + tone + " note on " + a.Topic}}}}}); err == nil {
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				text = tc.Text
			}
		}
	}
	var roots []string
	if res, err := peer.ListRoots(ctx); err == nil {
		for _, r := range res.Roots {
			roots = append(roots, r.URI)
		}
	}
	_ = peer.Progress(ctx, 3, 3, "done")
	return fmt.Sprintf("%s (tone %s; roots %s)", text, tone, strings.Join(roots, ",")), nil
}

func main() {
	as := flag.String("as", "", "the caller's `SUBJECT` (default: nobody, who sees no tool)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *as); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, as string) error {
	tools := methods.Map{}
	tools.Register("notes.draft", draft)
	srv, err := toolgate.New(ctx, toolgate.Options{
		Source:         &engine.Source{RegistryFS: builtin, Registry: "registry.yaml", PolicyFS: builtin, Policies: "policy"},
		Methods:        tools,
		Caller:         mcpadapter.StaticCaller(identity.Static(as, nil)),
		Audit:          os.Stderr,
		Implementation: &mcp.Implementation{Name: "notes", Version: "1"},
	})
	if err != nil {
		return err
	}
	err = srv.Serve(ctx, &mcp.StdioTransport{})
	if cerr := srv.Close(); err == nil {
		err = cerr
	}
	if ctx.Err() != nil || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}
