package mcpadapter_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/internal/testkit/conformance"
	"github.com/toolgate/toolgate/toolcall"
)

var update = flag.Bool("update", false, "rewrite the golden responses of testdata/conformance")

// fixture is a conformance fixture with the setup it names.
type fixture struct {
	*conformance.Fixture
	setup setup
}

func loadFixtures(t testing.TB) []*fixture {
	t.Helper()
	fs, err := conformance.Load(filepath.Join("testdata", "conformance"))
	require.NoError(t, err)
	var out []*fixture
	for _, f := range fs {
		var c *toolcall.Caller
		if f.Caller != nil {
			c = &toolcall.Caller{Subject: f.Caller.Subject, Roles: f.Caller.Roles, Claims: f.Caller.Claims}
		}
		out = append(out, &fixture{Fixture: f, setup: setup{caller: c, hooks: f.Hooks, registry: f.Registry, policies: f.Policies}})
	}
	return out
}

// leaks are what no answer may contain: Go types, file paths, stack frames,
// validator keywords, OPA error codes, decoder text.
var leaks = regexp.MustCompile(`\.go:\d|goroutine \d|/etc/|/var/|\*[a-z]+\.[A-Z]|jsonschema|eval_[a-z_]+_error|rego_[a-z_]+_error|panic|runtime\.|\bexpected (integer|number|object)\b|main\.|mcpadapter|toolgate\.internal|Go struct field|Go value of type|cannot unmarshal|unmarshaling|json: |does(n't| not) validate`)

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
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			f.setup.opts = append(f.setup.opts[:len(f.setup.opts):len(f.setup.opts)], opts...)
			// want is the golden response: the fixture's, or under -update
			// the one just written, which every other revision and the
			// go-sdk client are then checked against all the same.
			want := f.Response
			for _, proto := range protocols {
				g := newGoverned(t, f.setup)
				c := g.connectRaw(t, proto)
				if _, ok := c.prepare(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + f.Params + `}`); !ok {
					continue // a _meta that is not an object cannot carry the 2026-07-28 keys
				}
				start := time.Now()
				resp := c.call(f.Params)
				res := toolResult(t, resp)
				for _, ct := range res.Content {
					b, _ := json.Marshal(ct)
					require.NotRegexp(t, leaks, string(b), "an answer leaks internals")
				}
				got := indent(t, resp)
				switch {
				case proto == proto20250618 && *update:
					require.NoError(t, f.WriteResponse(got))
					want = got
				case proto == proto20250618:
					require.Equal(t, want, got, "%s (%s)\n%s", f.Path, proto, f.Comment)
				default:
					require.Equal(t, stripMeta(t, want), stripMeta(t, got), "%s (%s)", f.Path, proto)
				}
				require.Equal(t, f.After, g.after.outcomes(), "after hooks (%s); %s", proto, time.Since(start))

				// The same call from a real go-sdk client gets the same result.
				if p, ok := sdkParams(f.Params); ok {
					g2 := newGoverned(t, f.setup)
					cs := g2.connectSDK(t, proto, nil)
					res, err := cs.CallTool(context.Background(), p)
					require.NoError(t, err, "a JSON-RPC error reached the go-sdk client")
					b, err := json.Marshal(res)
					require.NoError(t, err)
					require.JSONEq(t, stripMeta(t, want), stripMeta(t, `{"result":`+string(b)+`}`), "go-sdk client (%s)", proto)
					require.Equal(t, f.After, g2.after.outcomes(), "after hooks, go-sdk client (%s)", proto)
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
