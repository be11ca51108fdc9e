package mcpadapter

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v5"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/internal/jsonx"
	"github.com/toolgate/toolgate/methods"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/schema"
)

const grantAll = "package toolgate.grant\n\ngranted := {t.name | some t in input.tools}\n"

// engineOf builds an engine serving reg as given (a registry built by hand
// may hold what Parse never produces, such as an empty default).
func engineOf(t testing.TB, reg *registry.Registry) *engine.Engine {
	t.Helper()
	fsys := fstest.MapFS{"registry.yaml": {Data: []byte("tools: []\n")}, "policies/grant.rego": {Data: []byte(grantAll)}}
	e, err := engine.New(context.Background(), engine.Source{FS: fsys, Registry: "registry.yaml", Policies: "policies"},
		engine.WithRegistryHook(func(context.Context, *registry.Registry) (*registry.Registry, error) { return reg, nil }))
	require.NoError(t, err)
	return e
}

func num(s string) *json.Number { n := json.Number(s); return &n }

// sharingRows are rows whose arguments are equal, or differ in one thing
// each, down to what only a registry built by hand can hold.
func sharingRows() []registry.Tool {
	text := registry.Argument{Name: "text", Type: registry.TypeString, Required: true}
	arg := func(f func(a *registry.Argument)) []registry.Argument {
		a := text
		f(&a)
		return []registry.Argument{a}
	}
	same := func(*registry.Argument) {}
	return []registry.Tool{
		{Name: "a", Method: "demo.echo", Arguments: arg(same), Annotations: map[string]any{"readOnlyHint": true, "x-<b>": "&"}},
		{Name: "b", Method: "demo.echo", Title: "B <i>", Description: "same as a", Arguments: arg(same)},
		{Name: "optional", Method: "demo.echo", Arguments: arg(func(a *registry.Argument) { a.Required = false })},
		{Name: "renamed", Method: "demo.echo", Arguments: arg(func(a *registry.Argument) { a.Name = "txt" })},
		{Name: "described", Method: "demo.echo", Arguments: arg(func(a *registry.Argument) { a.Description = "<said>" })},
		{Name: "default", Method: "demo.echo", Arguments: arg(func(a *registry.Argument) { a.Required, a.Default = false, json.RawMessage(`"x"`) })},
		{Name: "enum", Method: "demo.echo", Arguments: arg(func(a *registry.Argument) { a.Enum = []json.RawMessage{json.RawMessage(`"x"`)} })},
		{Name: "enum-empty", Method: "demo.echo", Arguments: arg(func(a *registry.Argument) { a.Enum = []json.RawMessage{} })},
		{Name: "pattern", Method: "demo.echo", Arguments: arg(func(a *registry.Argument) { a.Pattern = "^x$" })},
		{Name: "int", Method: "demo.echo", Arguments: arg(func(a *registry.Argument) { a.Type = registry.TypeInt })},
		{Name: "min", Method: "demo.echo", Arguments: arg(func(a *registry.Argument) { a.Type, a.Minimum = registry.TypeInt, num("1") })},
		{Name: "max", Method: "demo.echo", Arguments: arg(func(a *registry.Argument) { a.Type, a.Maximum = registry.TypeInt, num("1") })},
		{Name: "items", Method: "demo.echo", Arguments: arg(func(a *registry.Argument) {
			a.Type, a.Items = registry.TypeArray, json.RawMessage(`{"type":"integer"}`)
		})},
		{Name: "items-other", Method: "demo.echo", Arguments: arg(func(a *registry.Argument) { a.Type, a.Items = registry.TypeArray, json.RawMessage(`{"type":"string"}`) })},
		{Name: "money", Method: "demo.echo", Arguments: arg(func(a *registry.Argument) { a.Type = "Money" })},
		{Name: "two", Method: "demo.echo", Arguments: append(arg(same), registry.Argument{Name: "n", Type: registry.TypeInt})},
		{Name: "none", Method: "demo.echo"},
		{Name: "none-again", Method: "demo.echo", Arguments: []registry.Argument{}},
	}
}

// The wire descriptors, rendered with shared inputSchemas, are byte for
// byte what rendering each row's InputSchema on its own gives.
func TestWireDescriptorsAreEachRowsOwn(t *testing.T) {
	t.Parallel()
	rows := sharingRows()
	rc := newRevisionCache(engineOf(t, &registry.Registry{Tools: rows}).Current())
	wire := rc.wires()
	require.Len(t, wire, len(rows))
	for i := range rows {
		r := &rows[i]
		want, err := jsonx.Marshal(struct {
			Name        string         `json:"name"`
			Title       string         `json:"title,omitempty"`
			Description string         `json:"description,omitempty"`
			InputSchema map[string]any `json:"inputSchema"`
			Annotations map[string]any `json:"annotations,omitempty"`
		}{r.Name, r.Title, r.Description, r.InputSchema(), r.Annotations})
		require.NoError(t, err)
		require.Equal(t, string(want), string(wire[i]), "row %s", r.Name)
	}
}

// Rows declaring equal arguments share their compiled schemas; rows that
// differ in anything the schema reads do not, and every shared schema
// answers as one compiled for its own row.
func TestArgumentSchemasAreSharedOnlyWhenEqual(t *testing.T) {
	t.Parallel()
	rows := sharingRows()
	rc := newRevisionCache(engineOf(t, &registry.Registry{Tools: rows}).Current())
	got := make([][]*jsonschema.Schema, len(rows))
	for i := range rows {
		s, err := rc.argSchemas(i)
		require.NoError(t, err, rows[i].Name)
		require.Len(t, s, len(rows[i].Arguments))
		got[i] = s
	}
	of := func(name string) *jsonschema.Schema {
		for i := range rows {
			if rows[i].Name == name {
				return got[i][0]
			}
		}
		panic(name)
	}
	require.Same(t, of("a"), of("b"), "a and b declare the same argument")
	require.Same(t, of("a"), of("optional"), "required is not part of an argument's own schema")
	require.Same(t, of("a"), of("renamed"), "nor is its name")
	require.Same(t, of("a"), of("two"), "two's first argument is a's")
	seen := map[*jsonschema.Schema]string{of("a"): "a"}
	for _, name := range []string{"described", "default", "enum", "enum-empty", "pattern", "int", "min", "max", "items", "items-other", "money"} {
		s := of(name)
		other, shared := seen[s]
		require.False(t, shared, "%s shares a schema with %s", name, other)
		seen[s] = name
	}
	values := []any{"x", "y", "", json.Number("1"), json.Number("0"), json.Number("2"), true, nil, []any{json.Number("1")}, []any{"x"},
		map[string]any{"amount": "1.00", "currency": "EUR"}, map[string]any{}}
	for i := range rows {
		for j := range rows[i].Arguments {
			own, err := schema.CompileValue(rows[i].Arguments[j].Schema())
			require.NoError(t, err)
			for _, v := range values {
				require.Equal(t, own.Validate(v) == nil, got[i][j].Validate(v) == nil, "row %s argument %d value %v", rows[i].Name, j, v)
			}
		}
	}
}

// An argument whose schema does not compile is named with the row that
// asks, also when another row with the same arguments compiled it first.
func TestArgumentSchemaErrorNamesTheRow(t *testing.T) {
	t.Parallel()
	bad := []registry.Argument{{Name: "p", Type: registry.TypeString, Pattern: "("}}
	rc := newRevisionCache(engineOf(t, &registry.Registry{Tools: []registry.Tool{
		{Name: "first", Method: "demo.echo", Arguments: bad},
		{Name: "second", Method: "demo.echo", Arguments: bad},
	}}).Current())
	_, err := rc.argSchemas(0)
	require.ErrorContains(t, err, "tool first argument p: compile schema: ")
	_, err = rc.argSchemas(1)
	require.ErrorContains(t, err, "tool second argument p: compile schema: ")
}

// Requests in flight when a revision is new share one derived cache and
// one rendering of its listing.
func TestConcurrentFirstRequestsShareOneCache(t *testing.T) {
	t.Parallel()
	e := engineOf(t, &registry.Registry{Tools: sharingRows()})
	a := New(Options{Revisions: e, Methods: methods.Map{}})
	const n = 8
	var start, done sync.WaitGroup
	start.Add(1)
	caches := make([]*revisionCache, n)
	wires := make([][]json.RawMessage, n)
	for i := range n {
		done.Go(func() {
			start.Wait()
			caches[i] = a.revision()
			wires[i] = caches[i].wires()
		})
	}
	start.Done()
	done.Wait()
	for i := range n {
		require.Same(t, caches[0], caches[i])
		require.Same(t, &wires[0][0], &wires[i][0])
	}
	require.Same(t, caches[0], a.cacheOf(e.Current()))
}

// benchRegistry is a registry of n rows like internal/testkit/benche2e's: every
// row declares the same argument.
func benchRegistry(n int) string {
	var b strings.Builder
	b.WriteString("sections:\n  rewards: { roles: [manager, admin] }\ntools:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - name: tool%d\n    method: demo.echo\n", i)
		if i%3 == 1 {
			b.WriteString("    section: rewards\n")
		}
		fmt.Fprintf(&b, "    arguments: [{ name: text, type: string, required: true }]\n    annotations: { readOnlyHint: %t }\n", i%2 == 0)
	}
	return b.String()
}

// liveHeap is the live heap after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC() // the cleanups of one collection may free more in the next
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// The cache derived from a revision, fully built (every row listed and its
// schemas compiled), retains little per row: the wire descriptor and a
// pointer, not an SDK descriptor with its own inputSchema maps and a
// compiled schema per called row. The bound is generous; the measure is
// the live heap, not time.
func TestRevisionCacheRetainsLittlePerRow(t *testing.T) {
	// Not parallel: it measures the heap.
	const rows = 5000
	fsys := fstest.MapFS{"registry.yaml": {Data: []byte(benchRegistry(rows))}, "policies/grant.rego": {Data: []byte(grantAll)}}
	e, err := engine.New(context.Background(), engine.Source{FS: fsys, Registry: "registry.yaml", Policies: "policies"}, engine.WithTimeout(time.Minute))
	require.NoError(t, err)
	rev := e.Current()
	before := liveHeap()
	rc := newRevisionCache(rev)
	require.Len(t, rc.wires(), rows)
	for i := range rows {
		_, err := rc.argSchemas(i)
		require.NoError(t, err)
	}
	after := liveHeap()
	perRow := (float64(after) - float64(before)) / rows
	t.Logf("revision cache of %d rows: %.0f B per row", rows, perRow)
	require.Less(t, perRow, 600.0, "bytes retained per row by the revision cache")
	runtime.KeepAlive(rc)
	runtime.KeepAlive(e)
}
