package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/toolgate/toolgate/internal/grantmode"
	"github.com/toolgate/toolgate/registry"
)

// Revision is one consistent, compiled state of registry, policies and data.
// A Revision is immutable and safe for concurrent use; every decision reads
// exactly one Revision, so a call never mixes the registry of one revision
// with the policies of another.
type Revision struct {
	number   uint64
	hash     string
	label    string // Source.Revision
	loadedAt time.Time
	reg      *registry.Registry
	index    map[string]int // tool name → row index
	rowTerms []rowTerms
	// rowObjects are each row's object in input.tools, by base flag (0:
	// false, 1: true), built on first use (rowObject).
	rowObjects [2][]atomic.Pointer[ast.Term]
	rowNames   ast.Set // every row's name term
	policies   *policySet
	opts       *options
	views      viewCache
	mode       grantmode.Mode
	history    historyReads // which decisions read input.history
	// historyTerms keeps the values of history entries read before; nil
	// when the registry keeps no history.
	historyTerms *historyTerms
	// decisions memoises grant decisions per caller; nil when the policy
	// is not cacheable or the cache is off.
	decisions *decisionCache
	flights   flights    // cold evaluations of decisions in progress (flight.go)
	canon     canonTable // shared copies of memoised values (canon.go)
	nobody    *GrantDecision
	// prompts: the imported prompts' objects in input.prompts, by base
	// flag, and their index by name (prompt.go).
	promptIndex   map[string]int
	promptObjects [2][]*ast.Term
	evals         atomic.Uint64    // policy evaluations, for tests
	files         []string         // registry first, then PolicyFiles
	stamps        map[string]stamp // each file's version as read, by name
}

// Number is the revision's sequence number within its Engine, from 1.
func (r *Revision) Number() uint64 { return r.number }

// Hash is the hex SHA-256 over the revision's registry, policy and data
// files (names and contents): equal hashes mean equal inputs.
func (r *Revision) Hash() string { return r.hash }

// LoadedAt is when the revision was built.
func (r *Revision) LoadedAt() time.Time { return r.loadedAt }

// Registry is the revision's registry. It must not be modified.
func (r *Revision) Registry() *registry.Registry { return r.reg }

// PolicyFiles lists the policy and data files the revision was built from.
func (r *Revision) PolicyFiles() []string { return append([]string(nil), r.policies.files...) }

// Files lists every file the revision was built from: the registry, then
// the policy and data files. Paths are as in Source (OS paths, or paths in
// Source.FS). A reload honours the settle window for each of them.
func (r *Revision) Files() []string { return append([]string(nil), r.files...) }

// Tool returns the row named name, or nil when no row has that name.
func (r *Revision) Tool(name string) *registry.Tool {
	if i := r.ToolIndex(name); i >= 0 {
		return &r.reg.Tools[i]
	}
	return nil
}

// ToolIndex returns the index of the row named name, or -1.
func (r *Revision) ToolIndex(name string) int {
	if i, ok := r.index[name]; ok {
		return i
	}
	return -1
}

// DecisionMode reports whether the revision memoises grant decisions per
// caller, and why. A policy is cacheable when the closure of
// data.toolgate.grant.granted (every rule and function it reaches) reads
// nothing under input.request, never the whole input, and calls no
// non-deterministic built-in (time.now_ns, http.send, rand.intn, ...): its
// granted set then depends only on the revision and the caller. why names
// what makes a policy uncacheable, with file and line, e.g. "reads
// input.request.meta at rego/grant.rego:12".
func (r *Revision) DecisionMode() (cacheable bool, why string) {
	switch {
	case r.decisions != nil:
		return true, r.mode.Why
	case r.mode.Cacheable:
		return false, "the decision cache is off (WithDecisionCache(false)); the policy would be cacheable: " + r.mode.Why
	}
	return false, r.mode.Why + r.splitMode()
}

// Label is the revision the source names (Source.Revision, an OPA
// bundle's manifest revision); "" when it names none.
func (r *Revision) Label() string { return r.label }

// String names the revision for logs and audit records: the source's
// revision (Label) when it names one, else number and short hash.
func (r *Revision) String() string {
	if r.label != "" {
		return r.label
	}
	return fmt.Sprintf("%d/%s", r.number, r.hash[:12])
}

// contentHash is a revision's hash (Revision.Hash) from what it is built
// of: the registry file, the rows a RegistryHook derived from it (nil when
// none), the source's label and the policy and data files.
func contentHash(regFile sourceFile, derived []byte, label string, files []sourceFile) string {
	h := sha256.New()
	parts := []sourceFile{{Rel: "\x00registry"}, regFile, {Rel: "\x00derived", Data: derived}}
	if label != "" {
		// Only then, so that the hashes of unlabelled sources stay as they were.
		parts = append(parts, sourceFile{Rel: "\x00revision", Data: []byte(label)})
	}
	for _, f := range append(parts, files...) {
		fmt.Fprintf(h, "%s\x00%d\x00", f.Rel, len(f.Data))
		h.Write(f.Data)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// build reads and compiles a whole revision from src. Nothing is shared with
// any other revision.
func build(ctx context.Context, src Source, number uint64, o *options) (*Revision, error) {
	regFile, err := src.readRegistry()
	if err != nil {
		return nil, err
	}
	reg, err := registry.Parse(regFile.Data, registry.FormatOf(regFile.Name))
	if err != nil {
		return nil, fmt.Errorf("registry %s: %w", regFile.Name, err)
	}
	var derived []byte // what the registry hook added, for the hash
	if o.rows != nil {
		r2, err := o.rows(ctx, reg)
		if err != nil {
			return nil, fmt.Errorf("registry %s: %w", regFile.Name, err)
		}
		if r2 != reg {
			// The imported prompts are part of what the revision is built
			// of (docs/contract.md §16): a changed prompt is a new
			// revision. Without prompts the hash is what it was.
			var v any = r2.Tools
			if len(r2.Prompts) > 0 {
				v = struct {
					Tools   []registry.Tool
					Prompts []registry.Prompt
				}{r2.Tools, r2.Prompts}
			}
			if derived, err = json.Marshal(v); err != nil {
				return nil, fmt.Errorf("registry %s: %w", regFile.Name, err)
			}
			reg = r2
		}
	}
	files, err := src.readPolicies()
	if err != nil {
		return nil, err
	}
	var hook func(string)
	if o.logger != nil {
		logger := o.logger
		hook = func(msg string) { logger.Info("policy print", slog.String("msg", msg)) }
	}
	ps, err := compilePolicies(ctx, files, hook, o.caps.opa())
	if err != nil {
		return nil, err
	}
	rev := &Revision{
		number:   number,
		hash:     contentHash(regFile, derived, src.Revision, files),
		label:    src.Revision,
		loadedAt: time.Now(),
		reg:      reg,
		index:    make(map[string]int, len(reg.Tools)),
		rowTerms: make([]rowTerms, len(reg.Tools)),
		rowObjects: [2][]atomic.Pointer[ast.Term]{
			make([]atomic.Pointer[ast.Term], len(reg.Tools)),
			make([]atomic.Pointer[ast.Term], len(reg.Tools)),
		},
		policies: ps,
		opts:     o,
		files:    append([]string{regFile.Name}, ps.files...),
		stamps:   make(map[string]stamp, len(files)+1),
	}
	for _, f := range append(files, regFile) {
		rev.stamps[f.Name] = f.Stamp
	}
	for i := range reg.Tools {
		rev.index[reg.Tools[i].Name] = i
		rt, err := buildRowTerms(&reg.Tools[i])
		if err != nil {
			return nil, err
		}
		rev.rowTerms[i] = rt
	}
	names := make([]*ast.Term, len(rev.rowTerms))
	for i := range rev.rowTerms {
		names[i] = rev.rowTerms[i].name
	}
	rev.rowNames = ast.NewSet(names...)
	rev.nobody = &GrantDecision{Revision: rev, Outcome: Nobody}
	rev.mode = grantmode.Analyse(ps.compiler, refGranted)
	if reg.History != nil {
		rev.history = analyseHistory(ps.compiler)
		rev.historyTerms = newHistoryTerms()
	}
	if ps.prompts {
		// One decision: memoised only when prompts can be too.
		if pm := grantmode.Analyse(ps.compiler, refPrompts); !pm.Cacheable {
			rev.mode = grantmode.Mode{Why: "data.toolgate.grant.prompts: " + pm.Why, Rules: pm.Rules}
		}
	}
	if err := rev.buildPrompts(); err != nil {
		return nil, err
	}
	if rev.mode.Cacheable && !o.noDecisionCache {
		rev.decisions = newDecisionCache(DefaultDecisionCacheSize)
	}
	return rev, nil
}
