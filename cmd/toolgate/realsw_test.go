package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/identity"
	"github.com/toolgate/toolgate/internal/testkit/mcptest"
	"github.com/toolgate/toolgate/internal/testkit/oidctest"
	"github.com/toolgate/toolgate/internal/testkit/proctest"
)

// realswDir holds the pinned real MCP software (scripts/realsw-setup): the
// reference servers, the TypeScript SDK client, the Inspector CLI, Node 22
// and the driver drive.mjs.
var realswDir = filepath.Join("..", "..", "testdata", "realsw")

// realswStart is how long a stdio server takes to start after the client's
// first contact (slow-start.mjs), as one that `npx` starts does: seconds.
const realswStart = "6000"

// realswCount is how many calls a client makes at once at first contact.
const realswCount = 20

// realswToken is the HTTP front's caller's token.
const realswToken = "realsw-token"

// realsw is one real server as the suite runs it.
type realsw struct {
	name string
	// stdio is the server's command line (node first), or nil for a server
	// reached over streamable HTTP at url.
	stdio []string
	url   string
	env   map[string]string
	// root is the directory the server is given (written "$ROOT" in the
	// driver's output).
	root string
	// gate is the file the driver creates at first contact (slow-start.mjs).
	gate  string
	calls []realswCall
	// concurrent is the call made realswCount times at once.
	concurrent realswCall
	replace    [][2]string
}

type realswCall struct {
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments"`
}

// realswResult is what drive.mjs prints.
type realswResult map[string]json.RawMessage

// TestRealSoftware (docs/contract.md §19, the measure): the reference MCP
// servers of the npm registry (server-filesystem, server-memory,
// server-everything over stdio, server-everything over streamable HTTP),
// driven by the TypeScript SDK client and by the MCP Inspector CLI, each
// directly and through toolgate (its HTTP front and its stdio front, the
// server imported with everything granted): the tool, prompt, resource and
// template listings are equal as JSON values, every tool of the filesystem
// and memory servers answers the same, and realswCount calls at first
// contact are all answered. A difference that testdata/realsw/known-gaps.txt
// lists is logged, not failed; a listed one that is gone fails (the list
// only shrinks).
func TestRealSoftware(t *testing.T) {
	if testing.Short() {
		t.Skip("real MCP software (npm servers, TypeScript SDK, Inspector CLI) directly and through the toolgate binary: skipped with -short")
	}
	t.Parallel()
	node := filepath.Join(realswDir, "node_modules", ".bin", "node")
	if _, err := os.Stat(node); err != nil {
		msg := "real MCP software not installed: run scripts/realsw-setup (npm ci in testdata/realsw)"
		if os.Getenv("CI") != "" {
			t.Fatal(msg + "; CI is set, so this is a failure")
		}
		t.Skip(msg)
	}
	node, err := filepath.Abs(node)
	require.NoError(t, err)
	dir, err := filepath.Abs(realswDir)
	require.NoError(t, err)
	gaps := readRealswGaps(t, filepath.Join(dir, "known-gaps.txt"))
	bin := toolgateBinary(t)
	mods := filepath.Join(dir, "node_modules", "@modelcontextprotocol")

	// server-everything over streamable HTTP: one process, a session each.
	port := fmt.Sprint(oidctest.FreePort(t))
	ev := exec.Command(node, filepath.Join(mods, "server-everything", "dist", "index.js"), "streamableHttp")
	ev.Env = append(os.Environ(), "PORT="+port)
	evp := proctest.Start(t, "server-everything streamableHttp", ev)
	evp.Await(t, evp.Stderr, regexp.MustCompile(`listening on port`))

	servers := []func(t *testing.T) realsw{
		func(t *testing.T) realsw { return realswFilesystem(t, node, mods) },
		func(t *testing.T) realsw { return realswMemory(t, node, mods) },
		func(t *testing.T) realsw {
			gate := filepath.Join(t.TempDir(), "contact")
			return realsw{name: "everything", stdio: realswStdio(node, gate, filepath.Join(mods, "server-everything", "dist", "index.js")), gate: gate,
				concurrent: realswCall{Name: "echo", Arguments: map[string]any{"message": "hello"}},
				calls:      []realswCall{{Name: "echo", Arguments: map[string]any{"message": "hello"}}, {Name: "get-sum", Arguments: map[string]any{"a": 2, "b": 3}}}}
		},
		func(t *testing.T) realsw {
			return realsw{name: "everything-http", url: "http://127.0.0.1:" + port + "/mcp",
				concurrent: realswCall{Name: "echo", Arguments: map[string]any{"message": "hello"}},
				calls:      []realswCall{{Name: "echo", Arguments: map[string]any{"message": "hello"}}, {Name: "get-sum", Arguments: map[string]any{"a": 2, "b": 3}}}}
		},
	}
	// Each run is one Node driver process (and the servers and toolgate
	// processes it reaches); at most a few at once on a small machine.
	slots := make(chan struct{}, 3)
	var mu sync.Mutex
	var lines []string
	seen := map[string]bool{}
	var wg sync.WaitGroup
	for _, mk := range servers {
		for _, client := range []string{"sdk", "inspector"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results := map[string]realswResult{}
				errs := map[string]error{}
				var rw sync.WaitGroup
				for _, front := range []string{"direct", "http", "stdio"} {
					rw.Add(1)
					go func() {
						defer rw.Done()
						slots <- struct{}{}
						defer func() { <-slots }()
						s := mk(t)
						r, err := realswRun(t, bin, node, dir, s, client, front)
						mu.Lock()
						results[front], errs[front] = r, err
						mu.Unlock()
					}()
				}
				rw.Wait()
				s := mk(t)
				mu.Lock()
				defer mu.Unlock()
				pair := s.name + "/" + client
				if errs["direct"] != nil {
					t.Errorf("%s directly: %v", pair, errs["direct"])
					return
				}
				direct := results["direct"]
				if n := realswAnswered(direct); n != realswCount {
					t.Errorf("%s directly: %d of %d concurrent calls answered: %s", pair, n, realswCount, direct["concurrent"])
				}
				for _, k := range []string{"tools", "prompts", "resources", "templates"} {
					var e struct {
						Error any `json:"error"`
					}
					if json.Unmarshal(direct[k], &e) == nil && e.Error != nil {
						t.Errorf("%s directly: %s failed: %s", pair, k, direct[k])
					}
				}
				for _, front := range []string{"http", "stdio"} {
					id := pair + "/" + front
					for _, d := range realswCompare(direct, results[front], errs[front]) {
						key := id + " " + d.aspect
						seen[key] = true
						reason, known := gaps[key]
						switch {
						case d.diff == "" && known && strings.HasPrefix(reason, "(timing)"):
							lines = append(lines, key+": equal this time: "+reason)
						case d.diff == "" && known:
							t.Errorf("%s: equal now; remove it from testdata/realsw/known-gaps.txt (%s)", key, reason)
						case d.diff == "":
							lines = append(lines, key+": equal")
						case known:
							lines = append(lines, key+": known gap: "+reason+"\n            "+realswShort(d.diff))
						default:
							t.Errorf("%s: differs through toolgate: %s", key, d.diff)
						}
					}
				}
			}()
		}
	}
	wg.Wait()
	for key := range gaps {
		if !seen[key] {
			t.Errorf("testdata/realsw/known-gaps.txt lists %q, which the suite does not compare", key)
		}
	}
	sort.Strings(lines)
	equal := 0
	for _, l := range lines {
		if strings.HasSuffix(l, ": equal") {
			equal++
		}
	}
	t.Logf("real software: %d comparisons equal, %d known gaps:\n%s", equal, len(lines)-equal, strings.Join(lines, "\n"))
}

// realswDiff is one compared aspect of a run through toolgate; diff is
// empty when it is what the direct run got.
type realswDiff struct{ aspect, diff string }

// realswCompare compares a run through toolgate with the direct run, aspect
// by aspect: each listing, the answers of each tool called, and the
// answers to the concurrent calls.
func realswCompare(direct, through realswResult, err error) []realswDiff {
	var out []realswDiff
	for _, k := range []string{"tools", "prompts", "resources", "templates"} {
		if _, ok := direct[k]; !ok {
			continue
		}
		d := ""
		if err != nil {
			d = err.Error()
		} else if !jsonEqual(direct[k], through[k]) {
			d = realswDiffText(direct[k], through[k])
		}
		out = append(out, realswDiff{k, d})
	}
	d := ""
	if err != nil {
		d = err.Error()
	} else if !jsonEqual(direct["concurrent"], through["concurrent"]) {
		d = realswDiffText(direct["concurrent"], through["concurrent"])
	}
	out = append(out, realswDiff{"concurrent", d})
	if _, ok := direct["calls"]; !ok {
		return out
	}
	dc, tc := realswCalls(direct), realswCalls(through)
	var names []string
	for name := range dc {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		d := ""
		if err != nil {
			d = err.Error()
		} else if !reflect.DeepEqual(dc[name], tc[name]) {
			dj, _ := json.Marshal(dc[name])
			tj, _ := json.Marshal(tc[name])
			d = realswDiffText(dj, tj)
		}
		out = append(out, realswDiff{"call " + name, d})
	}
	return out
}

// realswCalls groups a run's answers by tool name, in call order.
func realswCalls(r realswResult) map[string][]any {
	var calls []map[string]any
	_ = json.Unmarshal(r["calls"], &calls)
	out := map[string][]any{}
	for _, c := range calls {
		name, _ := c["name"].(string)
		out[name] = append(out[name], c)
	}
	return out
}

func realswAnswered(r realswResult) int {
	var c struct {
		Answered int `json:"answered"`
	}
	_ = json.Unmarshal(r["concurrent"], &c)
	return c.Answered
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// realswRun runs drive.mjs for server s with client, directly or through
// toolgate's front ("http" or "stdio").
func realswRun(t *testing.T, bin, node, dir string, s realsw, client, front string) (realswResult, error) {
	plan := map[string]any{"client": client, "calls": s.calls, "concurrent": s.concurrent, "count": realswCount, "replace": s.replace}
	if s.root != "" {
		plan["root"] = s.root
	}
	if s.gate != "" {
		plan["gate"] = s.gate
	}
	switch front {
	case "direct":
		if s.url != "" {
			plan["target"] = map[string]any{"url": s.url}
		} else {
			plan["target"] = map[string]any{"command": s.stdio[0], "args": s.stdio[1:], "env": s.env}
		}
	default:
		cfg, reg, pol, tokens := realswGateway(t, s)
		if front == "http" {
			srv := serveHTTP(t, "--config", cfg, "--registry", reg, "--policy", pol, "--tokens", tokens)
			plan["target"] = map[string]any{"url": srv.url, "headers": map[string]string{"Authorization": "Bearer " + realswToken}}
		} else {
			plan["target"] = map[string]any{"command": bin, "args": []string{"serve", "--stdio", "--as", "realsw", "--role", "realsw",
				"--config", cfg, "--registry", reg, "--policy", pol, "--ledger", "memory", "--no-watch", "--eval-timeout", "1m",
				"--audit", filepath.Join(t.TempDir(), "audit.jsonl")}}
		}
	}
	planFile := filepath.Join(t.TempDir(), "plan.json")
	b, err := json.Marshal(plan)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(planFile, b, 0o600))
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(dir, "drive.mjs"), planFile)
	cmd.Dir = dir
	cmd.WaitDelay = 5 * time.Second
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if ctx.Err() != nil {
		return nil, fmt.Errorf("%s %s %s: drive.mjs did not finish within 5 minutes: %s", s.name, client, front, stderr.String())
	}
	if err != nil {
		return nil, fmt.Errorf("%s %s %s: drive.mjs: %v: %s", s.name, client, front, err, stderr.String())
	}
	var r realswResult
	if err := json.Unmarshal(out, &r); err != nil {
		return nil, fmt.Errorf("%s %s %s: drive.mjs printed %q: %v", s.name, client, front, out, err)
	}
	return r, nil
}

// realswGateway writes toolgate's config (s as its one upstream, every
// tool, prompt and resource imported under its own name into a section the
// caller's role has), registry, policy and tokens.
func realswGateway(t *testing.T, s realsw) (cfg, reg, pol, tokens string) {
	dir := t.TempDir()
	var up strings.Builder
	up.WriteString("upstreams:\n  - name: real\n")
	if s.url != "" {
		fmt.Fprintf(&up, "    url: %q\n", s.url)
	} else {
		fmt.Fprintf(&up, "    command: %q\n", strings.Join(s.stdio, " "))
	}
	if len(s.env) > 0 {
		up.WriteString("    env:\n")
		for k, v := range s.env {
			fmt.Fprintf(&up, "      %s: %q\n", k, v)
		}
	}
	up.WriteString("    import: true\n    prefix: \"\"\n    section: realsw\n    trust_annotations: true\n")
	cfg = filepath.Join(dir, "toolgate.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(up.String()), 0o600))
	reg = filepath.Join(dir, "registry.yaml")
	require.NoError(t, os.WriteFile(reg, []byte("sections:\n  realsw: { roles: [realsw] }\ntools: []\n"), 0o600))
	pol = filepath.Join(dir, "policy")
	require.NoError(t, os.MkdirAll(pol, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(pol, "grant.rego"), []byte("package toolgate.grant\n"), 0o600))
	tokens = mcptest.WriteTokens(t, dir, map[string]identity.TokenEntry{realswToken: {Subject: "realsw", Roles: []string{"realsw"}}})
	return cfg, reg, pol, tokens
}

// realswStdio is the command line of a Node server script started as npx
// starts it (slow-start.mjs, realswStart milliseconds).
func realswStdio(node, gate, script string, args ...string) []string {
	slow := filepath.Join(filepath.Dir(script), "..", "..", "..", "..", "slow-start.mjs") // testdata/realsw
	return append([]string{node, filepath.Clean(slow), gate, realswStart, script}, args...)
}

// realswFilesystem is server-filesystem over a fresh directory, with a call
// of each of its tools (and one outside the allowed directory).
func realswFilesystem(t *testing.T, node, mods string) realsw {
	root := t.TempDir()
	gate := filepath.Join(t.TempDir(), "contact")
	png, _ := base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=")
	files := map[string][]byte{
		"notes.txt":      []byte("alpha\nbeta\ngamma\n"),
		"docs/readme.md": []byte("# Readme\n"),
		"docs/guide.md":  []byte("# Guide\nstep one\n"),
		"pixel.png":      png,
		"old.txt":        []byte("to be moved\n"),
	}
	for name, data := range files {
		p := filepath.Join(root, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, data, 0o644))
	}
	r := func(p string) string { return filepath.Join(root, p) }
	return realsw{
		name:       "filesystem",
		stdio:      realswStdio(node, gate, filepath.Join(mods, "server-filesystem", "dist", "index.js"), root),
		gate:       gate,
		root:       root,
		concurrent: realswCall{"list_allowed_directories", map[string]any{}},
		replace:    [][2]string{{`(created|modified|accessed): [^\n]*`, "$1: TIME"}},
		calls: []realswCall{
			{"list_allowed_directories", map[string]any{}},
			{"read_text_file", map[string]any{"path": r("notes.txt")}},
			{"read_text_file", map[string]any{"path": r("notes.txt"), "head": 2}},
			{"read_text_file", map[string]any{"path": "/etc/hostname"}},
			{"read_file", map[string]any{"path": r("notes.txt")}},
			{"read_media_file", map[string]any{"path": r("pixel.png")}},
			{"read_multiple_files", map[string]any{"paths": []string{r("notes.txt"), r("docs/readme.md")}}},
			{"write_file", map[string]any{"path": r("new.txt"), "content": "written\n"}},
			{"edit_file", map[string]any{"path": r("new.txt"), "edits": []map[string]any{{"oldText": "written", "newText": "edited"}}}},
			{"create_directory", map[string]any{"path": r("made/deeper")}},
			{"move_file", map[string]any{"source": r("old.txt"), "destination": r("made/moved.txt")}},
			{"list_directory", map[string]any{"path": root}},
			{"list_directory_with_sizes", map[string]any{"path": root, "sortBy": "name"}},
			{"directory_tree", map[string]any{"path": r("docs")}},
			{"search_files", map[string]any{"path": root, "pattern": "*.md"}},
			{"get_file_info", map[string]any{"path": r("notes.txt")}},
		},
	}
}

// realswMemory is server-memory over a fresh memory file, with a call of
// each of its tools.
func realswMemory(t *testing.T, node, mods string) realsw {
	file := filepath.Join(t.TempDir(), "memory.jsonl")
	gate := filepath.Join(t.TempDir(), "contact")
	ada := map[string]any{"name": "Ada", "entityType": "person", "observations": []string{"wrote the first program"}}
	engine := map[string]any{"name": "Engine", "entityType": "machine", "observations": []string{"analytical"}}
	rel := map[string]any{"from": "Ada", "to": "Engine", "relationType": "programmed"}
	return realsw{
		name:       "memory",
		stdio:      realswStdio(node, gate, filepath.Join(mods, "server-memory", "dist", "index.js")),
		gate:       gate,
		env:        map[string]string{"MEMORY_FILE_PATH": file},
		concurrent: realswCall{"read_graph", map[string]any{}},
		calls: []realswCall{
			{"create_entities", map[string]any{"entities": []any{ada, engine}}},
			{"create_relations", map[string]any{"relations": []any{rel}}},
			{"add_observations", map[string]any{"observations": []any{map[string]any{"entityName": "Ada", "contents": []string{"mathematician"}}}}},
			{"read_graph", map[string]any{}},
			{"search_nodes", map[string]any{"query": "Ada"}},
			{"open_nodes", map[string]any{"names": []string{"Engine"}}},
			{"delete_observations", map[string]any{"deletions": []any{map[string]any{"entityName": "Ada", "observations": []string{"mathematician"}}}}},
			{"delete_relations", map[string]any{"relations": []any{rel}}},
			{"delete_entities", map[string]any{"entityNames": []string{"Engine"}}},
			{"read_graph", map[string]any{}},
		},
	}
}

// readRealswGaps reads the known gaps: "SERVER/CLIENT/FRONT ASPECT  reason"
// a line, where ASPECT is tools, prompts, resources, templates, concurrent
// or "call:TOOL" ('#' starts a comment). A reason that starts "(timing)"
// is a difference that shows or not depending on how fast the upstream
// comes up: it does not fail the test when equal.
func readRealswGaps(t *testing.T, path string) map[string]string {
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	gaps := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		require.GreaterOrEqual(t, len(fields), 3, "known gap without a reason: %q", sc.Text())
		aspect := strings.Replace(fields[1], "call:", "call ", 1)
		gaps[fields[0]+" "+aspect] = strings.Join(fields[2:], " ")
	}
	require.NoError(t, sc.Err())
	return gaps
}

// realswShort is a difference cut to a line's worth, for the summary.
func realswShort(diff string) string {
	if len(diff) > 600 {
		return diff[:600] + " …"
	}
	return diff
}

// realswDiffText shows two JSON texts from where they first differ (with
// some bytes before it for context) in the compact encoding, so a long
// listing's difference is readable.
func realswDiffText(direct, through []byte) string {
	a, b := compactJSON(direct), compactJSON(through)
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	from := max(0, i-120)
	cut := func(s string) string {
		end := min(len(s), i+240)
		return s[from:end]
	}
	return fmt.Sprintf("at byte %d: directly …%s…\nthrough toolgate …%s…", i, cut(a), cut(b))
}

// compactJSON is b re-encoded with its object keys sorted, so that two
// JSON-equal texts read the same up to their first real difference.
func compactJSON(b []byte) string {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return string(b)
	}
	out, err := json.Marshal(v)
	if err != nil {
		return string(b)
	}
	return string(out)
}
