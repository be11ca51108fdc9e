// Command embed is an MCP server of a small shop whose tools toolgate
// governs, embedded through its front door (toolgate.New): one call gives
// the governed server, Serve wraps the transport, Close flushes the audit
// trail. It serves stdio, for the caller --as and --role name:
//
//	go run ./example/embed --as cid --role contractor
//
// Its registry and policy are built in (registry.yaml, policy/); --registry
// and --policy read others from disk, reloaded on change: every session
// whose listing a reload changes gets notifications/tools/list_changed.
// Over HTTP, mount srv.Handler() with a Caller that reads the request's
// credentials.
package main

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

// Reward is what shop.getReward returns.
type Reward struct {
	ID     int    `json:"id"`
	Points int    `json:"points"`
	Label  string `json:"label"`
}

// shop returns the Go methods the registry's rows dispatch to.
func shop() methods.Map {
	tools := methods.Map{}
	tools.Register("shop.getReward", func(ctx context.Context, a struct {
		IDReward int `json:"idReward"`
	}) (Reward, error) {
		return Reward{ID: a.IDReward, Points: 10 * a.IDReward, Label: fmt.Sprintf("reward %d", a.IDReward)}, nil
	})
	tools.Register("shop.deleteReward", func(ctx context.Context, a struct {
		IDReward int `json:"idReward"`
	}) (string, error) {
		return fmt.Sprintf("deleted reward %d", a.IDReward), nil
	})
	return tools
}

type roles []string

func (r *roles) String() string     { return strings.Join(*r, ",") }
func (r *roles) Set(v string) error { *r = append(*r, v); return nil }

func main() {
	var (
		as               string
		rs               roles
		registry, policy string
	)
	flag.StringVar(&as, "as", "", "the caller's `SUBJECT` (default: nobody, who sees no tool)")
	flag.Var(&rs, "role", "a `ROLE` of the caller (repeatable)")
	flag.StringVar(&registry, "registry", "", "the registry `FILE` (default: the built-in one)")
	flag.StringVar(&policy, "policy", "", "the policy `DIR` (default: the built-in one)")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, as, rs, registry, policy); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, as string, rs []string, registry, policy string) error {
	src := engine.Source{Registry: registry, Policies: policy}
	if registry == "" {
		src.RegistryFS, src.Registry = builtin, "registry.yaml"
	}
	if policy == "" {
		src.PolicyFS, src.Policies = builtin, "policy"
	}
	srv, err := toolgate.New(ctx, toolgate.Options{
		Source:  &src,
		Methods: shop(),
		// The caller of every request: nobody without --as.
		Caller: mcpadapter.StaticCaller(identity.Static(as, rs)),
		// The audit trail, one JSON line per call; Close flushes it.
		Audit:          os.Stderr,
		Watch:          registry != "" || policy != "",
		Implementation: &mcp.Implementation{Name: "shop", Version: "1"},
	})
	if err != nil {
		return err
	}
	err = srv.Serve(ctx, &mcp.StdioTransport{})
	if cerr := srv.Close(); err == nil {
		err = cerr
	}
	if ctx.Err() != nil || errors.Is(err, io.EOF) {
		return nil // interrupted, or the client closed stdin
	}
	return err
}
