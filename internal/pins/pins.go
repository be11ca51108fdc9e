// Package pins keeps the upstream tool definitions an operator accepted
// (docs/contract.md §15): per upstream and tool, the SHA-256 of the tool's canonical
// definition, in a YAML file reviewed like a lockfile.
//
// A definition is the tool's name, title, description, inputSchema,
// outputSchema and annotations, as one JSON object canonicalised with
// RFC 8785 (JSON Canonicalization Scheme): object keys sorted by UTF-16
// code units, numbers and strings serialised as ECMAScript does, no
// insignificant white space. Two listings of the same definition hash the
// same whatever their key order, spacing or number spelling.
//
//	def, err := pins.Define(tool)    // canonical definition and its hash
//	f, err := pins.Load("pins.yaml") // a missing file is an empty File
//	served := f.Check("files", def) == pins.Match
//	_, err = pins.Update("pins.yaml", func(f *pins.File) bool { f.Set("files", def); return true })
//
// The hash is what counts: a tool is served only while its definition
// hashes to its pin. The pretty-printed definition stored beside it is for
// people (reviews, `toolgate pins check`'s diff); a pin edited by hand to
// a wrong hash hides its tool, it never opens it.
package pins

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/gowebpki/jcs"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/pmezard/go-difflib/difflib"
	"gopkg.in/yaml.v3"

	"github.com/toolgate/toolgate/internal/fsx"
)

// FileName is the pins file's name in the state directory when --pins is
// not given.
const FileName = "pins.yaml"

// Version is the format version a pins file carries.
const Version = 1

// ErrFile is wrapped by every error about a pins file that cannot be read
// or parsed; the error names the file.
var ErrFile = errors.New("pins file")

// Definition is one tool's canonical definition.
type Definition struct {
	// Tool is the tool's name at the upstream.
	Tool string
	// Canonical is the RFC 8785 canonical JSON of the definition.
	Canonical []byte
	// SHA256 is the lowercase hex SHA-256 of Canonical.
	SHA256 string
}

// definitionKeys are the members of a tool that its definition holds.
var definitionKeys = []string{"name", "title", "description", "inputSchema", "outputSchema", "annotations"}

// Define returns the canonical definition of t: its name, title,
// description, inputSchema, outputSchema and annotations (those it has),
// canonicalised with RFC 8785. It fails only for a tool whose JSON cannot
// be canonicalised (for instance a number beyond the IEEE 754 range).
func Define(t *mcp.Tool) (Definition, error) {
	b, err := json.Marshal(t)
	if err != nil {
		return Definition{}, fmt.Errorf("pins: tool %q: %w", t.Name, err)
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return Definition{}, fmt.Errorf("pins: tool %q: %w", t.Name, err)
	}
	def := make(map[string]json.RawMessage, len(definitionKeys))
	for _, k := range definitionKeys {
		if v, ok := all[k]; ok && string(v) != "null" {
			def[k] = v
		}
	}
	b, err = json.Marshal(def)
	if err != nil {
		return Definition{}, fmt.Errorf("pins: tool %q: %w", t.Name, err)
	}
	canon, err := jcs.Transform(b)
	if err != nil {
		return Definition{}, fmt.Errorf("pins: tool %q: canonical JSON: %w", t.Name, err)
	}
	sum := sha256.Sum256(canon)
	return Definition{Tool: t.Name, Canonical: canon, SHA256: hex.EncodeToString(sum[:])}, nil
}

// Pretty is the definition indented for people: two spaces, the canonical
// key order.
func (d Definition) Pretty() string {
	var buf bytes.Buffer
	if err := json.Indent(&buf, d.Canonical, "", "  "); err != nil {
		return string(d.Canonical)
	}
	return buf.String()
}

// Pin is what the pins file holds for one tool.
type Pin struct {
	// SHA256 is the hash of the accepted canonical definition: 64
	// lowercase hex digits.
	SHA256 string `yaml:"sha256"`
	// Definition is the accepted definition, pretty-printed (Pretty), for
	// reviews and diffs; it does not decide anything.
	Definition string `yaml:"definition,omitempty"`
}

// File is a pins file: per upstream name, per tool name, its Pin. An
// upstream present in Upstreams has been recorded (its first import is
// done), even with no tool.
type File struct {
	Version   int                       `yaml:"version"`
	Upstreams map[string]map[string]Pin `yaml:"upstreams"`
}

// Status is how a tool's definition compares with the pins.
type Status int

const (
	// Unrecorded: the upstream has no pins yet (its first import records them).
	Unrecorded Status = iota
	// Match: the definition hashes to its pin; the tool is served.
	Match
	// Drifted: the tool has a pin and the definition does not hash to it.
	Drifted
	// New: the upstream is recorded, the tool has no pin.
	New
)

func (s Status) String() string {
	switch s {
	case Match:
		return "pinned"
	case Drifted:
		return "drifted"
	case New:
		return "new"
	}
	return "unrecorded"
}

// Recorded reports whether the upstream has pins (possibly none).
func (f *File) Recorded(upstream string) bool {
	_, ok := f.Upstreams[upstream]
	return ok
}

// Pin returns the pin of an upstream's tool.
func (f *File) Pin(upstream, tool string) (Pin, bool) {
	p, ok := f.Upstreams[upstream][tool]
	return p, ok
}

// Check compares a definition with its pin.
func (f *File) Check(upstream string, d Definition) Status {
	tools, ok := f.Upstreams[upstream]
	if !ok {
		return Unrecorded
	}
	p, ok := tools[d.Tool]
	switch {
	case !ok:
		return New
	case p.SHA256 == d.SHA256:
		return Match
	}
	return Drifted
}

// Set pins d for the upstream, recording the upstream.
func (f *File) Set(upstream string, d Definition) {
	f.Record(upstream)
	f.Upstreams[upstream][d.Tool] = Pin{SHA256: d.SHA256, Definition: d.Pretty()}
}

// Record marks the upstream as recorded (with the pins it has).
func (f *File) Record(upstream string) {
	if f.Upstreams == nil {
		f.Upstreams = map[string]map[string]Pin{}
	}
	if f.Upstreams[upstream] == nil {
		f.Upstreams[upstream] = map[string]Pin{}
	}
}

// Remove drops the pin of an upstream's tool; it reports whether there was one.
func (f *File) Remove(upstream, tool string) bool {
	if _, ok := f.Upstreams[upstream][tool]; !ok {
		return false
	}
	delete(f.Upstreams[upstream], tool)
	return true
}

var hexRE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// Load reads a pins file. A file that does not exist is an empty File (no
// upstream recorded yet). Anything else that keeps it from being read —
// not a regular file, larger than 16 MiB, unreadable, not YAML, an unknown
// key, another version, a sha256 that is not 64 lowercase hex digits — is
// an error wrapping ErrFile that names the file: pinning cannot work from
// a file it cannot read, so nothing is served from it.
func Load(path string) (*File, error) {
	data, err := fsx.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &File{Version: Version}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrFile, path, err)
	}
	f, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrFile, path, err)
	}
	return f, nil
}

// Parse reads the content of a pins file (see Load).
func Parse(data []byte) (*File, error) {
	f := &File{}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("empty (delete the file to record the pins anew)")
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(f); err != nil {
		return nil, err
	}
	if f.Version != Version {
		return nil, fmt.Errorf("version %d: want %d", f.Version, Version)
	}
	var probs []string
	for up, tools := range f.Upstreams {
		for tool, p := range tools {
			if !hexRE.MatchString(p.SHA256) {
				probs = append(probs, fmt.Sprintf("upstreams.%s.%s.sha256: want 64 lowercase hex digits", up, tool))
			}
		}
		if tools == nil {
			f.Upstreams[up] = map[string]Pin{}
		}
	}
	if len(probs) > 0 {
		sort.Strings(probs)
		return nil, errors.New(strings.Join(probs, "; "))
	}
	return f, nil
}

const header = `# toolgate pins: the upstream tool definitions the operator accepted (docs/contract.md §15).
# Review changes like a lockfile. The sha256 decides (RFC 8785 canonical JSON
# of the definition); the definition beside it is for reading and diffs.
# toolgate pins check: compare with the upstreams; toolgate pins accept: record.
`

// Marshal renders f as the pins file's YAML, upstreams and tools sorted by
// name, definitions as literal blocks.
func (f *File) Marshal() ([]byte, error) {
	out := File{Version: Version, Upstreams: f.Upstreams}
	if out.Upstreams == nil {
		out.Upstreams = map[string]map[string]Pin{}
	}
	var buf bytes.Buffer
	buf.WriteString(header)
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(out); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Save writes f to path atomically: a temporary file in the same
// directory, synced, then renamed over path, so a reader sees the old file
// or the new one, never a part. A new file is created 0644 (it holds no
// secret and is meant to be reviewed and committed); an existing one keeps
// its mode. Missing directories are created 0700 (the state directory).
func Save(path string, f *File) error {
	data, err := f.Marshal()
	if err != nil {
		return fmt.Errorf("%w %s: %w", ErrFile, path, err)
	}
	if resolved, err := filepath.EvalSymlinks(path); err == nil {
		path = resolved
	}
	mode := fs.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("%w %s: %w", ErrFile, path, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("%w %s: %w", ErrFile, path, err)
	}
	done := false
	defer func() {
		if !done {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("%w %s: %w", ErrFile, path, err)
	}
	if err := tmp.Chmod(mode); err != nil {
		return fmt.Errorf("%w %s: %w", ErrFile, path, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("%w %s: %w", ErrFile, path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("%w %s: %w", ErrFile, path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("%w %s: %w", ErrFile, path, err)
	}
	done = true
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // the rename itself survives a crash
		_ = d.Close()
	}
	return nil
}

// Update reads the pins file, lets change modify it and, when change
// reports a change, writes it back (Save). It returns the file as it now
// is. Reading just before writing keeps the window in which a concurrent
// writer's change could be lost small; there is no lock across processes.
func Update(path string, change func(f *File) bool) (*File, error) {
	f, err := Load(path)
	if err != nil {
		return nil, err
	}
	if change(f) {
		if err := Save(path, f); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// Diff is a unified diff from the pinned definition (as stored in the pins
// file) to the current one; "" when they read the same.
func Diff(label string, pinned string, current Definition) string {
	var a []string // a tool without a pin: the diff adds every line
	if pinned != "" {
		if !strings.HasSuffix(pinned, "\n") {
			pinned += "\n"
		}
		a = difflib.SplitLines(pinned)
		a = a[:len(a)-1] // SplitLines adds an empty last line after the final newline
	}
	cur := current.Pretty() + "\n"
	b := difflib.SplitLines(cur)
	b = b[:len(b)-1]
	out, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A:        a,
		B:        b,
		FromFile: "pinned " + label,
		ToFile:   "upstream " + label,
		Context:  3,
	})
	if err != nil {
		return ""
	}
	return out
}

// StoredMatches reports whether the pretty definition stored in a pin
// canonicalises to its hash: false for a pin whose hash or definition was
// edited by hand (its diff then shows the stored text, not what the hash
// accepted).
func (p Pin) StoredMatches() bool {
	if p.Definition == "" {
		return false
	}
	canon, err := jcs.Transform([]byte(p.Definition))
	if err != nil {
		return false
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:]) == p.SHA256
}
