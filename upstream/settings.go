package upstream

import (
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Settings is an upstream as `toolgate serve` is told of it: an entry of
// its settings file's upstreams, or --upstream NAME=COMMAND|URL
// (ParseSettings). It is Config as a person writes it: the command a line
// of text, the environment a mapping. PoolConfig makes the Config.
type Settings struct {
	// Name is how rows name it (method upstream:NAME/TOOL; imported tools
	// are NAME.TOOL), so it holds no dot (SettingsName).
	Name string
	// Command is the command line of a stdio server, split into words
	// like a shell splits them, quotes and backslashes included, but
	// without any expansion (SplitCommand); Args, when set, are further
	// arguments taken as they are.
	Command string
	Args    []string
	// URL is the endpoint of a streamable HTTP server (http or https). It
	// may hold ${VAR} or ${file:PATH} (a key in its query, say), resolved
	// when the pool is made; errors and logs name it without its query and
	// user information.
	URL string
	// Import, Section, TrustAnnotations, Pin and Prefix are Config's (only
	// settable in the settings file).
	Import           bool
	Section          string
	TrustAnnotations bool
	Pin              bool
	Prefix           *string
	// Remember is Config's (only settable in the settings file).
	Remember map[string][]string
	// Headers are sent with every request to an HTTP upstream; Env is a
	// stdio upstream's environment besides PATH, HOME, LANG, TZ and
	// TMPDIR (all of toolgate's with InheritEnv). Values may be ${VAR} or
	// ${file:PATH}. Auth is OAuth toward an HTTP upstream. docs/contract.md
	// §17; only settable in the settings file.
	Headers    map[string]string
	Env        map[string]string
	InheritEnv bool
	Auth       *Auth
	// Timeout bounds each attempt to reach the upstream, up to its answer
	// to initialize (Config.ConnectTimeout); zero is
	// DefaultConnectTimeout. Only settable in the settings file.
	Timeout time.Duration
}

// SettingsName is what a Settings.Name must match: Config's names
// without the dot, which separates NAME and TOOL in an imported row.
var SettingsName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ParseSettings reads the --upstream form NAME=COMMAND or NAME=URL, the
// one reading of it (ParseFlag is this, checked): spaces around NAME and
// the value are dropped, and a value starting with http:// or https://,
// in any case (a URL's scheme is case-insensitive), is a URL. COMMAND is
// kept as given; it is split into words once, by SplitCommand (Argv).
// What the value names is checked by Problems.
func ParseSettings(v string) (Settings, error) {
	name, target, ok := strings.Cut(v, "=")
	name, target = strings.TrimSpace(name), strings.TrimSpace(target)
	if !ok || name == "" || target == "" {
		return Settings{}, fmt.Errorf("want NAME=COMMAND or NAME=URL, got %q", redactSettings(v))
	}
	u := Settings{Name: name}
	if isHTTPURL(target) {
		u.URL = target
	} else {
		u.Command = target
	}
	return u, nil
}

func isHTTPURL(s string) bool {
	lower := strings.ToLower(s)
	return strings.HasPrefix(lower, "http://") || strings.HasPrefix(lower, "https://")
}

// PoolConfig is the pool's configuration of u; its secrets (${VAR},
// ${file:PATH}) are resolved when the pool is made.
func (u Settings) PoolConfig() Config {
	cfg := Config{Name: u.Name, Command: u.Argv(), URL: u.URL, Import: u.Import,
		Section: u.Section, TrustAnnotations: u.TrustAnnotations, Pin: u.Pin, Prefix: u.Prefix,
		InheritEnv: u.InheritEnv, Auth: u.Auth, ConnectTimeout: u.Timeout}
	if len(u.Headers) > 0 {
		cfg.Headers = maps.Clone(u.Headers)
	}
	for _, k := range slices.Sorted(maps.Keys(u.Env)) {
		cfg.Env = append(cfg.Env, k+"="+u.Env[k])
	}
	if len(u.Remember) > 0 {
		cfg.Remember = maps.Clone(u.Remember)
	}
	return cfg
}

// Argv is the command and arguments to run a stdio upstream; a Command
// that does not split (an unterminated quote: Problems reports it)
// contributes no word.
func (u Settings) Argv() []string {
	words, _ := SplitCommand(u.Command)
	return append(words, u.Args...)
}

// Problems are what is wrong with u alone, each a sentence naming the
// setting; none when u can be served.
func (u Settings) Problems() []string {
	var probs []string
	if !SettingsName.MatchString(u.Name) {
		probs = append(probs, "name must match "+SettingsName.String())
	}
	switch {
	case u.URL != "" && (u.Command != "" || len(u.Args) > 0):
		probs = append(probs, "give either command or url, not both")
	case u.URL != "" && IsReference(u.URL): // checked once resolved, when the pool is made
	case u.URL != "" && !isHTTPURL(u.URL):
		probs = append(probs, "url must be http:// or https://")
	case u.URL != "":
		if p, err := url.Parse(u.URL); err != nil || p.Host == "" {
			probs = append(probs, "url must be an http(s) URL with a host")
		}
	case u.URL == "":
		if _, err := SplitCommand(u.Command); err != nil && strings.TrimSpace(u.Command) != "" {
			probs = append(probs, "command: "+err.Error())
		} else if len(u.Argv()) == 0 {
			probs = append(probs, "give a command or a url")
		}
	}
	if u.Pin && !u.Import {
		probs = append(probs, "pin needs import: true")
	}
	if u.Timeout < 0 {
		probs = append(probs, "timeout must be a positive duration")
	}
	if u.Headers != nil || u.Env != nil || u.InheritEnv || u.Auth != nil {
		pc := u.PoolConfig()
		probs = append(probs, CredentialProblems(&pc)...)
	}
	return probs
}
