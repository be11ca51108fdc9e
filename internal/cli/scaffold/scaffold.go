// Package scaffold writes a new toolgate project (toolgate init): the
// settings file, a registry, grant and call policies with commented
// recipes, passing policy tests and a tokens file with the hashes of two
// fresh tokens (a user's and an operator's), optionally in front of one
// upstream MCP server, imported closed and granted to one role. The
// templates are embedded.
package scaffold

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"text/template"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/toolgate/toolgate/upstream"
)

//go:embed template
var templates embed.FS

// DefaultRole is the role the scaffold's sections and user token hold.
const DefaultRole = "user"

// OperatorRole is the role of the scaffold's operator token: serve's
// default operator role (admin_role), which the console's matrix,
// GET /healthz?verbose=1 and /metrics need.
const OperatorRole = "admin"

// Tokens are the bearer tokens of a new project. The tokens file holds
// only their SHA-256; whoever made them prints them once.
type Tokens struct {
	// User is the token of the subject "me" with the project's role.
	User string
	// Operator is the token of the subject "operator" with OperatorRole.
	Operator string
}

// NewTokens returns two fresh random tokens (256 bits each from
// crypto/rand).
func NewTokens() (*Tokens, error) {
	var t Tokens
	for _, p := range []*string{&t.User, &t.Operator} {
		var b [32]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, err
		}
		*p = "tg_" + base64.RawURLEncoding.EncodeToString(b[:])
	}
	return &t, nil
}

// Upstream is the MCP server a project governs: Command (a stdio server's
// command line) or URL (streamable HTTP).
type Upstream struct {
	Name    string
	Command string
	URL     string
}

// ParseUpstream reads NAME=COMMAND or NAME=URL as toolgate serve's
// --upstream does; it must be UTF-8, as the settings file it goes into.
func ParseUpstream(s string) (*Upstream, error) {
	if !utf8.ValidString(s) {
		return nil, fmt.Errorf("%q is not valid UTF-8", s)
	}
	if _, err := upstream.ParseFlag(s); err != nil {
		return nil, err
	}
	// The command line as given, not split: what the settings file holds.
	set, err := upstream.ParseSettings(s)
	if err != nil {
		return nil, err
	}
	return &Upstream{Name: set.Name, Command: set.Command, URL: set.URL}, nil
}

// Options say what to scaffold.
type Options struct {
	// Upstream, when set, is imported (closed: section upstream:NAME) and
	// that section granted to Role.
	Upstream *Upstream
	// Role is the role of the project's section, the upstream's section and
	// the user token; "" is DefaultRole.
	Role string
	// Tokens are the tokens whose hashes the tokens file lists; nil makes
	// fresh ones (NewTokens) that nobody can print: pass your own to tell
	// them to the user.
	Tokens *Tokens
}

var roleRE = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,64}$`)

// Write writes the project into dir (made when missing) and returns the
// files it wrote, slash-separated and relative to dir. It writes nothing
// when one of them exists already.
func Write(dir string, opts Options) ([]string, error) {
	if opts.Role == "" {
		opts.Role = DefaultRole
	}
	if !roleRE.MatchString(opts.Role) {
		return nil, fmt.Errorf("role %q: want ^[A-Za-z0-9_.:-]{1,64}$", opts.Role)
	}
	files, err := Render(opts)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(files))
	var exist []string
	for _, f := range files {
		names = append(names, f.Name)
		if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(f.Name))); err == nil {
			exist = append(exist, f.Name)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	if len(exist) > 0 {
		return nil, fmt.Errorf("%s: %s already exist(s); nothing written", dir, strings.Join(exist, ", "))
	}
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		// O_EXCL: a file made since the check above is not overwritten.
		w, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return nil, err
		}
		_, err = w.Write(f.Data)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, err
		}
	}
	return names, nil
}

// File is one file of a project.
type File struct {
	Name string // slash-separated, relative to the project
	Data []byte
}

// Render returns the project's files, in a fixed order.
func Render(opts Options) ([]File, error) {
	if opts.Role == "" {
		opts.Role = DefaultRole
	}
	if opts.Tokens == nil {
		t, err := NewTokens()
		if err != nil {
			return nil, err
		}
		opts.Tokens = t
	}
	user, operator := sha256.Sum256([]byte(opts.Tokens.User)), sha256.Sum256([]byte(opts.Tokens.Operator))
	data := struct {
		Options
		UserHash, OperatorHash, OperatorRole string
	}{opts, hex.EncodeToString(user[:]), hex.EncodeToString(operator[:]), OperatorRole}
	funcs := template.FuncMap{"yaml": yamlScalar}
	var out []File
	err := fs.WalkDir(templates, "template", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		src, err := fs.ReadFile(templates, p)
		if err != nil {
			return err
		}
		t, err := template.New(path.Base(p)).Funcs(funcs).Option("missingkey=error").Parse(string(src))
		if err != nil {
			return err
		}
		var b bytes.Buffer
		if err := t.Execute(&b, data); err != nil {
			return err
		}
		out = append(out, File{Name: strings.TrimSuffix(strings.TrimPrefix(p, "template/"), ".tmpl"), Data: b.Bytes()})
		return nil
	})
	return out, err
}

// yamlScalar is s as one double-quoted YAML scalar, on one line whatever
// s holds (newlines, quotes, '#', ': '): a value cannot add keys.
// FuzzUpstreamInSettings checks it.
func yamlScalar(s string) (string, error) {
	b, err := yaml.Marshal(&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Style: yaml.DoubleQuotedStyle, Value: s})
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(string(b), "\n"), nil
}
