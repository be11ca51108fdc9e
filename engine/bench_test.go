package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/internal/testkit/benchdata"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/toolcall"
)

// The policies and the registry the benchmarks measure (internal/testkit/benchdata):
// benchGrant is the bundled example's grant policy, cacheable: it reads the
// caller's roles and every row; benchGrantMeta adds an opt-out in _meta
// (it reads input.request, so it is evaluated per call); benchGrantRow's
// per-row body reads the request.
const (
	benchGrant     = benchdata.Memoised
	benchGrantMeta = benchdata.ReadsMeta
	benchGrantRow  = benchdata.ReadsMetaPerRow
)

func benchRegistry(n int) string { return benchdata.Registry(n, false) }

func benchRevision(b *testing.B, n int, policy string) (*engine.Revision, string) {
	b.Helper()
	reg := benchRegistry(n)
	fsys := fstest.MapFS{"registry.yaml": {Data: []byte(reg)}, "policies/grant.rego": {Data: []byte(policy)}}
	// A long deadline: on a loaded machine a descheduled evaluation must not
	// fail the benchmark.
	e, err := engine.New(context.Background(), engine.Source{FS: fsys, Registry: "registry.yaml", Policies: "policies"}, engine.WithTimeout(time.Minute))
	require.NoError(b, err)
	return e.Current(), reg
}

var (
	benchCaller = &toolcall.Caller{Subject: "cid", Roles: []string{"manager", "contractor"}, Claims: map[string]any{}}
	benchReq    = engine.Request{
		Method:    engine.MethodCall,
		Tool:      "echo",
		Arguments: json.RawMessage(`{"text":"hello"}`),
		Meta:      engine.BoundMeta(json.RawMessage(`{"festi/runId":"r-1"}`)),
	}
)

// settle collects the garbage of setting a benchmark up, so that it is not
// paid for inside the timed loop.
func settle(b *testing.B) {
	runtime.GC()
	b.ReportAllocs()
	b.ResetTimer()
}

// BenchmarkCallDecision is the call path's grant decision (Grant, then
// Allowed) for a cacheable policy, warm: a cache hit.
func BenchmarkCallDecision(b *testing.B) {
	for _, n := range []int{10, 1000, 10000} {
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) {
			rev, _ := benchRevision(b, n, benchGrant)
			if ok, why := rev.DecisionMode(); !ok {
				b.Fatal(why)
			}
			ctx := context.Background()
			if ok, err := rev.Grant(ctx, benchCaller, benchReq).Allowed("echo"); !ok || err != nil {
				b.Fatal("echo is not granted", err)
			}
			settle(b)
			for b.Loop() {
				if ok, _ := rev.Grant(ctx, benchCaller, benchReq).Allowed("echo"); !ok {
					b.Fatal("echo is not granted")
				}
			}
		})
	}
}

// BenchmarkCallDecisionUncached is the same decision for a policy that
// reads _meta: one evaluation per call.
func BenchmarkCallDecisionUncached(b *testing.B) {
	b.Run("rows=1000", func(b *testing.B) {
		rev, _ := benchRevision(b, 1000, benchGrantMeta)
		if ok, why := rev.DecisionMode(); ok {
			b.Fatal("cacheable: ", why)
		}
		ctx := context.Background()
		settle(b)
		for b.Loop() {
			if ok, err := rev.Grant(ctx, benchCaller, benchReq).Allowed("echo"); !ok || err != nil {
				b.Fatal("echo is not granted", err)
			}
		}
	})
}

// BenchmarkCallDecisionRequestDependent is the call path's grant decision
// for benchGrantMeta, whose condition on _meta stands outside the per-row
// body: the per-row work depends on the caller alone.
func BenchmarkCallDecisionRequestDependent(b *testing.B) {
	for _, n := range []int{10, 1000, 10000} {
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) {
			benchPerCall(b, n, benchGrantMeta)
		})
	}
}

// BenchmarkCallDecisionRowDependent is the same for benchGrantRow, whose
// per-row body reads _meta.
func BenchmarkCallDecisionRowDependent(b *testing.B) {
	b.Run("rows=1000", func(b *testing.B) {
		benchPerCall(b, 1000, benchGrantRow)
	})
}

// benchPerCall measures Grant then Allowed on the call path for a policy
// that reads the request, warm (the caller has been seen before).
func benchPerCall(b *testing.B, n int, policy string) {
	rev, _ := benchRevision(b, n, policy)
	if ok, why := rev.DecisionMode(); ok {
		b.Fatal("cacheable: ", why)
	}
	ctx := context.Background()
	if ok, err := rev.Grant(ctx, benchCaller, benchReq).Allowed("echo"); !ok || err != nil {
		b.Fatal("echo is not granted", err)
	}
	settle(b)
	for b.Loop() {
		if ok, err := rev.Grant(ctx, benchCaller, benchReq).Allowed("echo"); !ok || err != nil {
			b.Fatal("echo is not granted", err)
		}
	}
}

// BenchmarkNaiveOPA is the obvious alternative to the engine: per call,
// build the input from Go maps (base decisions included), evaluate a
// prepared query of benchGrant with rego.EvalInput, read the set.
func BenchmarkNaiveOPA(b *testing.B) {
	b.Run("rows=1000", func(b *testing.B) {
		_, regText := benchRevision(b, 1000, benchGrant)
		reg, err := registry.Parse([]byte(regText), registry.FormatYAML)
		require.NoError(b, err)
		ctx := context.Background()
		pq, err := rego.New(rego.Query("data.toolgate.grant.granted"), rego.Module("grant.rego", benchGrant)).PrepareForEval(ctx)
		require.NoError(b, err)
		decide := func() bool {
			tools := make([]any, len(reg.Tools))
			for i := range reg.Tools {
				t := &reg.Tools[i]
				args := make([]any, len(t.Arguments))
				for j, a := range t.Arguments {
					args[j] = map[string]any{"name": a.Name, "type": a.Type, "required": a.Required}
				}
				var section, driver any
				if t.Section != "" {
					section = t.Section
				}
				if t.Driver != "" {
					driver = t.Driver
				}
				tools[i] = map[string]any{
					"name": t.Name, "method": t.Method, "section": section, "driver": driver,
					"base": engine.Base(reg, t, benchCaller), "arguments": args, "annotations": t.Annotations,
				}
			}
			var arguments, meta map[string]any
			_ = json.Unmarshal(benchReq.Arguments, &arguments)
			_ = json.Unmarshal([]byte(`{"festi/runId":"r-1"}`), &meta)
			input := map[string]any{
				"caller":  map[string]any{"subject": benchCaller.Subject, "roles": benchCaller.Roles, "claims": benchCaller.Claims},
				"tools":   tools,
				"request": map[string]any{"method": benchReq.Method, "tool": benchReq.Tool, "arguments": arguments, "meta": meta},
			}
			rs, err := pq.Eval(ctx, rego.EvalInput(input))
			if err != nil || len(rs) == 0 {
				b.Fatal(err)
			}
			for _, n := range rs[0].Expressions[0].Value.([]any) {
				if n == "echo" {
					return true
				}
			}
			return false
		}
		if !decide() {
			b.Fatal("echo is not granted")
		}
		settle(b)
		for b.Loop() {
			decide()
		}
	})
}

// BenchmarkBarePrepared evaluates benchGrantMeta as the engine does (same
// query, same options) over an input built once: the floor for an
// uncached decision.
func BenchmarkBarePrepared(b *testing.B) {
	b.Run("rows=1000", func(b *testing.B) {
		rev, _ := benchRevision(b, 1000, benchGrantMeta)
		doc, err := rev.InputDocument(benchCaller, benchReq, false)
		require.NoError(b, err)
		input, err := ast.ValueFromReader(bytes.NewReader(doc))
		require.NoError(b, err)
		ctx := context.Background()
		pq, err := rego.New(
			rego.Query("g := [x | x := data.toolgate.grant.granted]"),
			rego.Module("grant.rego", benchGrantMeta),
			rego.StrictBuiltinErrors(true),
			rego.GenerateJSON(func(t *ast.Term, _ *rego.EvalContext) (any, error) { return t.Value, nil }),
		).PrepareForEval(ctx)
		require.NoError(b, err)
		decide := func() bool {
			rs, err := pq.Eval(ctx, rego.EvalParsedInput(input))
			if err != nil || len(rs) != 1 {
				b.Fatal(err)
			}
			set := rs[0].Bindings["g"].(*ast.Array).Elem(0).Value.(ast.Set)
			return set.Contains(ast.StringTerm("echo"))
		}
		if !decide() {
			b.Fatal("echo is not granted")
		}
		settle(b)
		for b.Loop() {
			decide()
		}
	})
}

// BenchmarkColdCallsConcurrent is 8 calls of one caller arriving together
// before its decision is memoised (a new caller per round): they share one
// evaluation. evals/op is the policy evaluations a round ran. For a split
// policy (split/) each call evaluates its request, but the caller's values
// are computed by the first.
func BenchmarkColdCallsConcurrent(b *testing.B) {
	b.Run("rows=10000", func(b *testing.B) { benchColdConcurrent(b, benchGrant) })
	b.Run("split/rows=10000", func(b *testing.B) { benchColdConcurrent(b, benchGrantMeta) })
}

func benchColdConcurrent(b *testing.B, policy string) {
	const inFlight = 8
	rev, _ := benchRevision(b, 10000, policy)
	ctx := context.Background()
	start := rev.Evaluations()
	rounds := 0
	settle(b)
	for b.Loop() {
		rounds++
		c := &toolcall.Caller{Subject: fmt.Sprintf("cold-%d", rounds), Roles: benchCaller.Roles, Claims: map[string]any{}}
		var wg sync.WaitGroup
		for range inFlight {
			wg.Go(func() {
				if ok, _ := rev.Grant(ctx, c, benchReq).Allowed("echo"); !ok {
					b.Error("echo is not granted")
				}
			})
		}
		wg.Wait()
	}
	b.ReportMetric(float64(rev.Evaluations()-start)/float64(rounds), "evals/op")
}

// BenchmarkReloadUnchanged is a Reload that finds the files as the serving
// revision read them (Watch's first attempt at start, for one): it reads
// and hashes them, and builds nothing.
func BenchmarkReloadUnchanged(b *testing.B) {
	b.Run("rows=10000", func(b *testing.B) {
		fsys := fstest.MapFS{"registry.yaml": {Data: []byte(benchRegistry(10000))}, "policies/grant.rego": {Data: []byte(benchGrant)}}
		e, err := engine.New(context.Background(), engine.Source{FS: fsys, Registry: "registry.yaml", Policies: "policies"})
		require.NoError(b, err)
		settle(b)
		for b.Loop() {
			if changed, err := e.Reload(context.Background()); changed || err != nil {
				b.Fatal(changed, err)
			}
		}
	})
}
