// Package calltool makes one MCP tool call the way a client would
// (toolgate call): it connects to a streamable HTTP endpoint with the
// go-sdk client (initialize, then tools/call) and writes the result.
//
//	args, err := calltool.ParseArguments([]string{"text=hi"})
//	res, err := calltool.Call(ctx, calltool.Options{URL: url, Token: token, Tool: "echo", Arguments: args})
//	err = calltool.WriteText(os.Stdout, res)
package calltool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options say what to call and where.
type Options struct {
	// URL is the MCP endpoint, http://ADDR/mcp.
	URL string
	// Token is the bearer token sent in every request; "" sends none
	// (the caller is nobody).
	Token string
	// Tool is the tool's name; Arguments its arguments (nil: none).
	Tool      string
	Arguments map[string]any
	// Client is the HTTP client; nil is http.DefaultClient's transport.
	Client *http.Client
}

// EndpointOf is the MCP endpoint of a server listening at addr (serve's
// --http): a wildcard host is reached on loopback.
func EndpointOf(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr + "/mcp"
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/mcp"
}

// ParseArguments reads a call's arguments from the command line: one
// JSON object, or NAME=VALUE pairs where VALUE is JSON when it parses as
// JSON (42, true, ["a"], {"k":1}, "42") and a string otherwise.
func ParseArguments(args []string) (map[string]any, error) {
	out := map[string]any{}
	if len(args) == 1 && strings.HasPrefix(strings.TrimSpace(args[0]), "{") {
		if err := json.Unmarshal([]byte(args[0]), &out); err != nil {
			return nil, fmt.Errorf("the arguments are not a JSON object: %v", err)
		}
		return out, nil
	}
	for _, a := range args {
		name, value, ok := strings.Cut(a, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("argument %q: want NAME=VALUE or one JSON object", a)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("argument %q is given twice", name)
		}
		var v any
		if err := json.Unmarshal([]byte(value), &v); err != nil {
			v = value
		}
		out[name] = v
	}
	return out, nil
}

// ConnectError is a failure to reach the server or to initialize a
// session with it: nothing was called.
type ConnectError struct {
	URL string
	Err error
}

func (e *ConnectError) Error() string {
	return fmt.Sprintf("cannot connect to %s: %v (is toolgate serve running there? --url or --config names another address)", e.URL, e.Err)
}

func (e *ConnectError) Unwrap() error { return e.Err }

// Call connects to opts.URL, calls the tool and closes the session. A
// tool's refusal is a result with IsError, not an error; errors are a
// *ConnectError or the JSON-RPC error the server answered.
func Call(ctx context.Context, opts Options) (*mcp.CallToolResult, error) {
	if opts.Tool == "" {
		return nil, errors.New("calltool: no tool named")
	}
	hc := &http.Client{Transport: http.DefaultTransport}
	if opts.Client != nil {
		c := *opts.Client
		hc = &c
		if hc.Transport == nil {
			hc.Transport = http.DefaultTransport
		}
	}
	if opts.Token != "" {
		hc.Transport = bearer{token: opts.Token, next: hc.Transport}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "toolgate-call", Version: "v1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: opts.URL, HTTPClient: hc, DisableStandaloneSSE: true}, nil)
	if err != nil {
		return nil, &ConnectError{URL: opts.URL, Err: err}
	}
	defer cs.Close()
	args := opts.Arguments
	if args == nil {
		args = map[string]any{}
	}
	return cs.CallTool(ctx, &mcp.CallToolParams{Name: opts.Tool, Arguments: args})
}

// bearer adds the token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// WriteText writes the result as a person reads it: each text item on its
// own line, any other item and the structured content as JSON.
func WriteText(w io.Writer, res *mcp.CallToolResult) error {
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			if _, err := fmt.Fprintln(w, t.Text); err != nil {
				return err
			}
			continue
		}
		b, err := json.Marshal(c)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintln(w, string(b)); err != nil {
			return err
		}
	}
	if res.StructuredContent != nil && len(res.Content) == 0 {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(w, string(b))
		return err
	}
	return nil
}

// WriteJSON writes the whole result as indented JSON.
func WriteJSON(w io.Writer, res *mcp.CallToolResult) error {
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}
