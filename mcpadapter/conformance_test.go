package mcpadapter_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
)

var update = flag.Bool("update", false, "rewrite the golden responses of testdata/conformance")

// fixture is one conformance scenario of testdata/conformance: a first line
// saying what it pins down, then sections "-- NAME --".
type fixture struct {
	name     string
	path     string
	comment  string
	setup    setup
	params   string
	after    []string
	response string
	order    []string
	sections map[string]string
}

func loadFixtures(t testing.TB) []*fixture {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "conformance", "*.txt"))
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	var out []*fixture
	for _, p := range paths {
		out = append(out, parseFixture(t, p))
	}
	return out
}

var sectionRE = regexp.MustCompile(`(?m)^-- (.+) --\n`)

func parseFixture(t testing.TB, path string) *fixture {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	text := string(data)
	f := &fixture{name: strings.TrimSuffix(filepath.Base(path), ".txt"), path: path, sections: map[string]string{}}
	locs := sectionRE.FindAllStringSubmatchIndex(text, -1)
	require.NotEmpty(t, locs, path)
	f.comment = strings.TrimSpace(text[:locs[0][0]])
	require.NotEmpty(t, f.comment, "%s: the first line says what the fixture pins down", path)
	for i, l := range locs {
		name := text[l[2]:l[3]]
		end := len(text)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		f.sections[name] = text[l[1]:end]
		f.order = append(f.order, name)
	}
	var s struct {
		Caller *engine.Caller `json:"caller"`
		Hooks  []string       `json:"hooks"`
	}
	require.NoError(t, json.Unmarshal([]byte(f.sections["setup"]), &s), path)
	f.setup = setup{caller: s.Caller, hooks: s.Hooks, registry: f.sections["registry"], policies: map[string]string{}}
	for name, body := range f.sections {
		if pn, ok := strings.CutPrefix(name, "policy "); ok {
			f.setup.policies[pn] = body
		}
	}
	f.params = strings.TrimSpace(f.sections["params"])
	require.NoError(t, json.Unmarshal([]byte(f.sections["after"]), &f.after), path)
	f.response = strings.TrimSpace(f.sections["response"])
	return f
}

func (f *fixture) write(t testing.TB, response string) {
	var b strings.Builder
	b.WriteString(f.comment + "\n")
	for _, name := range f.order {
		body := f.sections[name]
		if name == "response" {
			body = response + "\n"
		}
		b.WriteString("-- " + name + " --\n" + body)
	}
	require.NoError(t, os.WriteFile(f.path, []byte(b.String()), 0o644))
}

// leaks are what no answer may contain: Go types, file paths, stack frames,
// validator keywords, OPA error codes.
var leaks = regexp.MustCompile(`\.go:\d|goroutine \d|/etc/|/var/|\*[a-z]+\.[A-Z]|jsonschema|eval_[a-z_]+_error|panic|runtime\.|\bexpected (integer|number|object)\b|main\.|mcpadapter|toolgate\.internal`)

// TestConformance runs every fixture through a governed server, over an
// in-memory transport, under each protocol revision the SDK serves, with
// the grant decision cache on and off.
func TestConformance(t *testing.T) {
	t.Parallel()
	for _, cache := range []bool{true, false} {
		t.Run(fmt.Sprintf("cache=%t", cache), func(t *testing.T) {
			t.Parallel()
			testConformance(t, engine.WithDecisionCache(cache))
		})
	}
}

func testConformance(t *testing.T, opts ...engine.Option) {
	for _, f := range loadFixtures(t) {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			f.setup.opts = append(f.setup.opts[:len(f.setup.opts):len(f.setup.opts)], opts...)
			for _, proto := range protocols {
				g := newGoverned(t, f.setup)
				c := g.connectRaw(t, proto)
				if _, ok := c.prepare(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + f.params + `}`); !ok {
					continue // a _meta that is not an object cannot carry the 2026-07-28 keys
				}
				start := time.Now()
				resp := c.call(f.params)
				res := toolResult(t, resp)
				for _, ct := range res.Content {
					b, _ := json.Marshal(ct)
					require.NotRegexp(t, leaks, string(b), "an answer leaks internals")
				}
				got := indent(t, resp)
				if proto == proto20250618 {
					if *update {
						f.write(t, got)
					} else {
						require.Equal(t, f.response, got, "%s (%s)\n%s", f.path, proto, f.comment)
					}
				} else if !*update {
					require.Equal(t, stripMeta(t, f.response), stripMeta(t, got), "%s (%s)", f.path, proto)
				}
				require.Equal(t, f.after, g.after.outcomes(), "after hooks (%s); %s", proto, time.Since(start))

				// The same call from a real go-sdk client gets the same result.
				if p, ok := sdkParams(f.params); ok && !*update {
					g2 := newGoverned(t, f.setup)
					cs := g2.connectSDK(t, proto, nil)
					res, err := cs.CallTool(context.Background(), p)
					require.NoError(t, err, "a JSON-RPC error reached the go-sdk client")
					b, err := json.Marshal(res)
					require.NoError(t, err)
					require.JSONEq(t, stripMeta(t, f.response), stripMeta(t, `{"result":`+string(b)+`}`), "go-sdk client (%s)", proto)
					require.Equal(t, f.after, g2.after.outcomes(), "after hooks, go-sdk client (%s)", proto)
				}
			}
		})
	}
}

func indent(t testing.TB, b []byte) string {
	var out bytes.Buffer
	require.NoError(t, json.Indent(&out, b, "", "  "))
	return out.String()
}

// stripMeta returns the response's result without its _meta (where the
// 2026-07-28 revision names the server).
func stripMeta(t testing.TB, resp string) string {
	var r map[string]any
	require.NoError(t, json.Unmarshal([]byte(resp), &r))
	if res, ok := r["result"].(map[string]any); ok {
		delete(res, "_meta")
		delete(res, "resultType")
		b, _ := json.Marshal(res)
		return string(b)
	}
	b, _ := json.Marshal(r["error"])
	return string(b)
}
