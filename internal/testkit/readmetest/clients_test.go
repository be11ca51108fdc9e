package readmetest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/testkit/oidctest"
)

// clientsPage is the page of client configurations TestClientSnippets runs.
const clientsPage = "docs/clients.md"

// A client configuration read from a page: a command the client starts
// (stdio), or a URL it connects to with the headers it sends (HTTP),
// under the server the page says to serve for it.
type clientConfig struct {
	where   string   // page:line
	section string   // the ## heading it is under
	serve   string   // the `toolgate serve ...` line of its section ("" for stdio)
	command []string // stdio: the command and its arguments
	url     string   // HTTP: the URL
	headers map[string]string
	// origin is the Origin a browser-based client's requests carry: the
	// --allowed-origin of its server.
	origin string
}

// clientConfigs reads the client configurations of blocks:
//
//   - a ```json block with "mcpServers" (Claude Desktop and other stdio
//     hosts): each server's command and args;
//   - a ```json block with "servers" (VS Code): each server's url and
//     headers;
//   - a `claude mcp add` line of a ```sh block: `--transport http NAME URL
//     --header "K: V"`, or `NAME -- COMMAND ARGS...`;
//   - a ```text block with "URL", "Header name" and "Header value" lines
//     (MCP Inspector's form).
//
// An HTTP configuration's server is the last `toolgate serve` line of a
// ```sh block before it in its section.
func clientConfigs(blocks []block) ([]clientConfig, error) {
	var out []clientConfig
	serve, section := "", ""
	for _, b := range blocks {
		if b.section != section {
			section, serve = b.section, ""
		}
		where := b.where()
		switch b.lang {
		case "sh":
			for _, l := range strings.Split(b.body, "\n") {
				l = strings.TrimSpace(l)
				switch {
				case strings.HasPrefix(l, "toolgate serve"):
					serve = l
				case strings.HasPrefix(l, "claude mcp add"):
					c, err := claudeAdd(l)
					if err != nil {
						return nil, fmt.Errorf("%s: %w", where, err)
					}
					c.where, c.section = where, section
					if c.url != "" {
						c.serve = serve
					}
					out = append(out, c)
				}
			}
		case "json":
			var doc struct {
				MCPServers map[string]struct {
					Command string   `json:"command"`
					Args    []string `json:"args"`
				} `json:"mcpServers"`
				Servers map[string]struct {
					Type    string            `json:"type"`
					URL     string            `json:"url"`
					Headers map[string]string `json:"headers"`
				} `json:"servers"`
			}
			if err := json.Unmarshal([]byte(b.body), &doc); err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			for _, s := range doc.MCPServers {
				out = append(out, clientConfig{where: where, section: section, command: append([]string{s.Command}, s.Args...)})
			}
			for _, s := range doc.Servers {
				if s.Type != "http" || s.URL == "" {
					return nil, fmt.Errorf("%s: a server without type http and a url", where)
				}
				out = append(out, clientConfig{where: where, section: section, serve: serve, url: s.URL, headers: s.Headers})
			}
		case "text":
			form := map[string]string{}
			for _, l := range strings.Split(b.body, "\n") {
				for _, k := range []string{"URL", "Header name", "Header value"} {
					if v, ok := strings.CutPrefix(l, k+" "); ok {
						form[k] = strings.TrimSpace(v)
					}
				}
			}
			if form["URL"] == "" {
				continue
			}
			c := clientConfig{where: where, section: section, serve: serve, url: form["URL"], headers: map[string]string{}}
			if form["Header name"] != "" {
				c.headers[form["Header name"]] = form["Header value"]
			}
			if m := regexp.MustCompile(`--allowed-origin (\S+)`).FindStringSubmatch(serve); m != nil {
				c.origin = m[1]
			}
			out = append(out, c)
		}
	}
	for _, c := range out {
		if c.url != "" && c.serve == "" {
			return nil, fmt.Errorf("%s: a URL with no `toolgate serve` line before it in its section", c.where)
		}
	}
	return out, nil
}

// claudeAdd reads a `claude mcp add` line.
func claudeAdd(line string) (clientConfig, error) {
	words, err := shellWords(line)
	if err != nil {
		return clientConfig{}, err
	}
	c := clientConfig{headers: map[string]string{}}
	for i := 3; i < len(words); i++ {
		switch w := words[i]; {
		case w == "--":
			c.command = words[i+1:]
			return c, nil
		case w == "--header" && i+1 < len(words):
			k, v, ok := strings.Cut(words[i+1], ":")
			if !ok {
				return c, fmt.Errorf("a --header without a colon: %q", words[i+1])
			}
			c.headers[strings.TrimSpace(k)] = strings.TrimSpace(v)
			i++
		case w == "--transport" && i+1 < len(words):
			i++
		case strings.HasPrefix(w, "http://") || strings.HasPrefix(w, "https://"):
			c.url = w
		}
	}
	if c.url == "" {
		return c, fmt.Errorf("claude mcp add with neither a URL nor -- COMMAND: %s", line)
	}
	return c, nil
}

// shellWords splits a command line as a shell would, for the quoting the
// pages use: '...' and "..." (without escapes inside).
func shellWords(line string) ([]string, error) {
	var words []string
	var cur strings.Builder
	in, quote := false, rune(0)
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ' || r == '\t':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("an unclosed quote: %s", line)
	}
	if in {
		words = append(words, cur.String())
	}
	return words, nil
}

// headers adds fixed headers to every request.
type headers struct {
	set  map[string]string
	next http.RoundTripper
}

func (h headers) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.set {
		r.Header.Set(k, v)
	}
	return h.next.RoundTrip(r)
}

// TestClientSnippets starts each client configuration of docs/clients.md
// (and the README's) as the client would: a stdio command is run and
// initialized through the go-sdk client, which lists the tools and calls
// echo; an HTTP configuration's server is started as its section says,
// and the go-sdk client connects to the URL with the headers it names. A
// configuration without headers is the OAuth one: the server must send the
// client to its issuer (401 with resource_metadata, whose document names
// the issuer), and a token from there must connect.
func TestClientSnippets(t *testing.T) {
	root := tourCheckout(t)
	blocks := pageBlocks(t, root, clientsPage)
	for _, b := range pageBlocks(t, root, "README.md") {
		if b.lang == "json" && strings.Contains(b.body, "mcpServers") {
			blocks = append(blocks, b)
		}
	}
	configs, err := clientConfigs(blocks)
	require.NoError(t, err)
	kinds := map[string]bool{}
	for _, c := range configs {
		switch {
		case c.command != nil:
			kinds["stdio"] = true
		case c.origin != "":
			kinds["origin"] = true
		case len(c.headers) > 0:
			kinds["header"] = true
		default:
			kinds["oauth"] = true
		}
	}
	require.Equal(t, map[string]bool{"stdio": true, "header": true, "oauth": true, "origin": true}, kinds,
		"%s must configure stdio, a header, OAuth and a browser origin", clientsPage)

	ctx, cancel := context.WithTimeout(t.Context(), tourTimeout)
	defer cancel()
	bin, err := goBuild(ctx, root, "toolgate", "./cmd/toolgate")
	require.NoError(t, err)
	for _, c := range configs {
		t.Run(c.where, func(t *testing.T) {
			if c.command != nil {
				runStdioClient(ctx, t, bin, c)
				return
			}
			runHTTPClient(ctx, t, root, c)
		})
	}
}

// runStdioClient starts c's command (toolgate: the binary built) as a
// stdio host does, and initializes, lists and calls through it.
func runStdioClient(ctx context.Context, t *testing.T, bin string, c clientConfig) {
	require.Equal(t, "toolgate", c.command[0], "%s: the command", c.where)
	cmd := exec.Command(bin, c.command[1:]...)
	state := t.TempDir()
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+state, "HOME="+state)
	cmd.Stderr = io.Discard
	client := mcp.NewClient(&mcp.Implementation{Name: "docs-clients", Version: "v0"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err, "%s: initialize over stdio", c.where)
	defer cs.Close()
	checkSession(ctx, t, c, cs)
}

// checkSession lists the tools (there are some, echo among them) and
// calls echo.
func checkSession(ctx context.Context, t *testing.T, c clientConfig, cs *mcp.ClientSession) {
	names, err := listNames(ctx, cs)
	require.NoError(t, err)
	require.Contains(t, names, "echo", "%s: the tools listed", c.where)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	require.NoError(t, err)
	require.False(t, res.IsError, "%s: echo", c.where)
	require.Equal(t, "hi", res.Content[0].(*mcp.TextContent).Text)
}

// runHTTPClient serves c's section's server and connects to it as c says.
func runHTTPClient(ctx context.Context, t *testing.T, root string, c clientConfig) {
	tr := newTour(t, root)
	require.NoError(t, tr.build(ctx, step{text: "go build -o toolgate ./cmd/toolgate"}))
	oauth := len(c.headers) == 0
	var provider *oidctest.Provider
	if oauth {
		provider = oidctest.Start(t, 0, "http://"+tr.addr+"/mcp")
		issuer := regexp.MustCompile(`--issuer (http://127\.0\.0\.1:\d+)`).FindStringSubmatch(c.serve)
		require.NotNil(t, issuer, "%s: the OAuth server line names no --issuer", c.where)
		tr.ports[strings.TrimPrefix(issuer[1], "http://")] = strings.TrimPrefix(provider.Issuer, "http://")
	}
	require.NoError(t, tr.serve(ctx, step{kind: "serve", text: "./" + c.serve}))
	url := tr.subst(c.url)
	set := map[string]string{}
	for k, v := range c.headers {
		set[k] = v
	}
	if c.origin != "" {
		set["Origin"] = c.origin
	}
	if oauth {
		token := checkOAuthDiscovery(t, url, provider)
		set["Authorization"] = "Bearer " + token
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "docs-clients", Version: "v0"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url,
		HTTPClient: &http.Client{Transport: headers{set: set, next: http.DefaultTransport}}}, nil)
	require.NoError(t, err, "%s: connect to %s; server output:\n%s", c.where, url, tr.server.stderr.String())
	defer cs.Close()
	checkSession(ctx, t, c, cs)

	if c.origin != "" {
		// Without the flag the same origin is refused: the flag is needed.
		tr.stop()
		plain := regexp.MustCompile(`\s*--allowed-origin \S+`).ReplaceAllString(c.serve, "")
		require.NoError(t, tr.serve(ctx, step{kind: "serve", text: "./" + plain}))
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{}`))
		require.NoError(t, err)
		for k, v := range set {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusForbidden, resp.StatusCode, "%s: Origin %s without --allowed-origin", c.where, c.origin)
	}
}

// checkOAuthDiscovery does what an OAuth client does first: a request
// without a token gets 401 naming the Protected Resource Metadata, which
// names the issuer; it returns a token for the server from that issuer.
func checkOAuthDiscovery(t *testing.T, url string, p *oidctest.Provider) string {
	resp, err := http.Post(url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	m := regexp.MustCompile(`resource_metadata="([^"]+)"`).FindStringSubmatch(resp.Header.Get("WWW-Authenticate"))
	require.NotNil(t, m, "401 without resource_metadata: %q", resp.Header.Get("WWW-Authenticate"))
	resp, err = http.Get(m[1])
	require.NoError(t, err)
	defer resp.Body.Close()
	var meta struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&meta))
	require.Equal(t, []string{p.Issuer}, meta.AuthorizationServers)
	require.Equal(t, url, meta.Resource)
	return p.Token(t, "alice", meta.Resource)
}

// TestClientConfigsRead: each form the page uses is read as a client
// would read it, and a URL without a server to start is an error.
func TestClientConfigsRead(t *testing.T) {
	md := "## A\n\n```json\n{\"mcpServers\": {\"x\": {\"command\": \"toolgate\", \"args\": [\"serve\", \"--stdio\"]}}}\n```\n\n" +
		"## B\n\n```sh\ntoolgate serve --allowed-origin http://localhost:6274\nclaude mcp add --transport http t http://127.0.0.1:8787/mcp --header \"Authorization: Bearer a b\"\nclaude mcp add t -- toolgate serve --stdio --as max\n```\n\n" +
		"```text\nURL            http://127.0.0.1:8787/mcp\nHeader name    Authorization\nHeader value   Bearer z\n```\n\n" +
		"```json\n{\"servers\": {\"t\": {\"type\": \"http\", \"url\": \"http://127.0.0.1:8787/mcp\"}}}\n```\n"
	blocks, err := parseBlocks(md)
	require.NoError(t, err)
	got, err := clientConfigs(blocks)
	require.NoError(t, err)
	require.Len(t, got, 5)
	require.Equal(t, []string{"toolgate", "serve", "--stdio"}, got[0].command)
	require.Equal(t, "http://127.0.0.1:8787/mcp", got[1].url)
	require.Equal(t, map[string]string{"Authorization": "Bearer a b"}, got[1].headers)
	require.Equal(t, "toolgate serve --allowed-origin http://localhost:6274", got[1].serve)
	require.Equal(t, []string{"toolgate", "serve", "--stdio", "--as", "max"}, got[2].command)
	require.Equal(t, map[string]string{"Authorization": "Bearer z"}, got[3].headers)
	require.Equal(t, "http://localhost:6274", got[3].origin)
	require.Empty(t, got[4].headers)

	_, err = clientConfigs(mustBlocks(t, "## C\n\n```json\n{\"servers\": {\"t\": {\"type\": \"http\", \"url\": \"http://x/mcp\"}}}\n```\n"))
	require.ErrorContains(t, err, "no `toolgate serve` line")
	_, err = clientConfigs(mustBlocks(t, "```sh\nclaude mcp add t\n```\n"))
	require.ErrorContains(t, err, "neither a URL nor -- COMMAND")
}

func mustBlocks(t *testing.T, md string) []block {
	t.Helper()
	blocks, err := parseBlocks(md)
	require.NoError(t, err)
	for i := range blocks {
		blocks[i].file = filepath.ToSlash("docs/x.md")
	}
	return blocks
}
