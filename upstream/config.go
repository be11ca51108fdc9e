package upstream

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultTimeout bounds one call to an upstream tool when Config.Timeout is
// zero.
const DefaultTimeout = 30 * time.Second

// Config describes one upstream MCP server.
type Config struct {
	// Name is the SERVER of `upstream:SERVER/TOOL`; imported rows are named
	// NAME.TOOL. It matches ^[A-Za-z0-9_.-]{1,64}$.
	Name string
	// Command runs the upstream over stdio: the program and its arguments.
	// Exactly one of Command, URL and Transport is set.
	Command []string
	// URL is the upstream's streamable HTTP endpoint (http or https); it
	// may hold ${VAR} or ${file:PATH} (Expand), resolved by NewPool.
	URL string
	// Transport, when set instead of Command or URL, returns a fresh
	// transport to an upstream for each connection: an MCP server in the
	// same process (mcp.NewInMemoryTransports), or any other transport.
	Transport func() mcp.Transport
	// Import makes the upstream's tools that no row names into rows
	// (Pool.ImportedRows), and serves its prompts and resources
	// (docs/contract.md §16: Pool.ImportedPrompts, the Pool's Catalog).
	Import bool
	// Prefix, when not nil, is prepended to the names of the imported
	// tools and prompts; nil is NAME. (the default); "" is allowed.
	Prefix *string
	// Section is the permission section of the imported rows; "" is
	// DefaultSection(Name), which no role holds until the registry's
	// sections list it (docs/contract.md §15: imported rows are closed by default).
	Section string
	// TrustAnnotations puts the annotations the upstream declares into the
	// imported rows' annotations (which policies read and tools/list
	// shows). Without it they reach policies only as upstream_annotations
	// and tools/list shows none: an upstream cannot vouch for itself.
	TrustAnnotations bool
	// Pin serves an imported tool only while its definition matches the
	// pin recorded for it in the pins file (Options.Pins, docs/contract.md §15): the
	// first import records them; a tool that drifts from its pin, or a new
	// tool, is not imported. Pin requires Import.
	Pin bool
	// Remember names, by the tool's name as the upstream lists it, the
	// arguments an imported tool's calls leave in the caller's history
	// (the imported row's remember, docs/contract.md §20).
	Remember map[string][]string
	// Timeout bounds each call, connecting included; zero is DefaultTimeout.
	Timeout time.Duration
	// ConnectTimeout bounds each attempt to reach the upstream: starting
	// its command (or reaching its URL) and the handshake, up to its
	// answer to initialize and its first tools/list. Until then the
	// gateway's listings wait for it (docs/contract.md §19). Zero is
	// Options.ConnectTimeout.
	ConnectTimeout time.Duration
	// Env is the stdio command's environment besides PATH, HOME, LANG,
	// TZ and TMPDIR of toolgate's own (KEY=VALUE; a VALUE may be ${VAR} or
	// ${file:PATH}, Expand); stdio only (docs/contract.md §17).
	Env []string
	// InheritEnv gives the stdio command all of toolgate's environment
	// (before Env), not only PATH, HOME, LANG, TZ and TMPDIR.
	InheritEnv bool
	// Headers are sent with every request to an HTTP upstream; a value may
	// be ${VAR} or ${file:PATH} (Expand). docs/contract.md §17.
	Headers map[string]string
	// Auth, when set, authenticates toolgate to an HTTP upstream with
	// OAuth: client credentials, or token exchange per caller
	// (docs/contract.md §17).
	Auth *Auth
}

// DefaultSection is the section of the rows imported from the upstream
// named name when its Config.Section is empty: upstream:NAME.
func DefaultSection(name string) string { return MethodPrefix + name }

// section is the section of the rows imported from c.
func (c *Config) section() string {
	if c.Section != "" {
		return c.Section
	}
	return DefaultSection(c.Name)
}

// prefix is what the imported tools' and prompts' names start with.
func (c *Config) prefix() string {
	if c.Prefix != nil {
		return *c.Prefix
	}
	return c.Name + "."
}

// ErrConfig is wrapped by every error about a malformed upstream
// configuration (ParseFlag, NewPool).
var ErrConfig = errors.New("upstream: invalid configuration")

var (
	nameRE   = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)
	prefixRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{0,64}$`)
)

// ParseFlag reads the value of a --upstream flag as `toolgate serve`
// does: ParseSettings, the entry's Problems, then the Config it makes
// (Settings.PoolConfig), checked as NewPool checks it. explain and init
// read --upstream through it, so the three commands take the same values.
func ParseFlag(s string) (Config, error) {
	u, err := ParseSettings(s)
	if err != nil {
		return Config{}, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if probs := u.Problems(); len(probs) > 0 {
		return Config{}, fmt.Errorf("%w: upstream %q: %s", ErrConfig, u.Name, strings.Join(probs, "; "))
	}
	cfg := u.PoolConfig()
	if err := cfg.validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// validate checks what NewPool and ParseFlag require of a Config.
func (c *Config) validate() error {
	if !nameRE.MatchString(c.Name) {
		return fmt.Errorf("%w: upstream name %q: want ^[A-Za-z0-9_.-]{1,64}$", ErrConfig, c.Name)
	}
	set := 0
	for _, ok := range []bool{len(c.Command) > 0, c.URL != "", c.Transport != nil} {
		if ok {
			set++
		}
	}
	switch {
	case set > 1:
		return fmt.Errorf("%w: upstream %s: more than one of a command, a URL and a transport", ErrConfig, c.Name)
	case set == 0:
		return fmt.Errorf("%w: upstream %s: neither a command nor a URL", ErrConfig, c.Name)
	case c.Transport != nil:
	case c.URL != "" && IsReference(c.URL): // checked once resolved (newEndpoint)
	case c.URL != "":
		u, err := url.Parse(c.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%w: upstream %s: %q is not an http(s) URL", ErrConfig, c.Name, redactURL(c.URL))
		}
	case c.Command[0] == "":
		return fmt.Errorf("%w: upstream %s: empty command", ErrConfig, c.Name)
	}
	if c.Prefix != nil && !prefixRE.MatchString(*c.Prefix) {
		return fmt.Errorf("%w: upstream %s: prefix %q: want ^[A-Za-z0-9_.-]{0,64}$ (the characters of a tool name)", ErrConfig, c.Name, *c.Prefix)
	}
	if c.Pin && !c.Import {
		return fmt.Errorf("%w: upstream %s: pin needs import", ErrConfig, c.Name)
	}
	if c.Timeout < 0 {
		return fmt.Errorf("%w: upstream %s: negative timeout", ErrConfig, c.Name)
	}
	if c.ConnectTimeout < 0 {
		return fmt.Errorf("%w: upstream %s: negative connect timeout", ErrConfig, c.Name)
	}
	return c.validateCredentials()
}

// SplitCommand splits s into words the way a POSIX shell splits a simple
// command line, without any expansion: '...' is literal, "..." honours \"
// and \\, a backslash outside quotes escapes the next character. It is the
// one reading of a COMMAND of --upstream and of a config file's command.
func SplitCommand(s string) ([]string, error) {
	var (
		words  []string
		cur    strings.Builder
		inWord bool
	)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("unterminated ' quote")
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			inWord = true
			closed := false
			for i++; i < len(s); i++ {
				if s[i] == '"' {
					closed = true
					break
				}
				if s[i] == '\\' && i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '\\') {
					i++
				}
				cur.WriteByte(s[i])
			}
			if !closed {
				return nil, errors.New(`unterminated " quote`)
			}
		case c == '\\':
			if i+1 == len(s) {
				return nil, errors.New("trailing backslash")
			}
			i++
			cur.WriteByte(s[i])
			inWord = true
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	if len(words) == 0 {
		return nil, errors.New("empty command")
	}
	return words, nil
}
