package toolgate_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/testkit/depstest"
)

// TestFrontDoorLinksNoExporter: the front door takes tracing and the
// decision log as interfaces (Options.Tracer, Options.DecisionLog), so a
// program that embeds it without them links neither package, no
// OpenTelemetry SDK or exporter, and no gRPC.
func TestFrontDoorLinksNoExporter(t *testing.T) {
	t.Parallel()
	deps := depstest.Deps(t)
	require.Contains(t, deps, "github.com/toolgate/toolgate", "the listing is the front door's")
	depstest.RefusePrefixes(t, deps, "the front door",
		"google.golang.org/grpc",
		"go.opentelemetry.io/otel/sdk",
		"go.opentelemetry.io/otel/exporters",
		"go.opentelemetry.io/proto",
		"github.com/toolgate/toolgate/tracing",
		"github.com/toolgate/toolgate/decisionlog",
		"github.com/prometheus/client_golang",
	)
}

// TestBinaryImportRules: the binary's packages import downwards. No
// server package imports a command's (internal/cli), the settings table
// (internal/config) imports no server package, and check and explain
// (internal/inspect) are a library the commands and the server both use,
// importing neither the settings table nor a server or command package.
func TestBinaryImportRules(t *testing.T) {
	t.Parallel()
	const mod = "github.com/toolgate/toolgate/"
	rules := []struct{ from, to string }{
		{"internal/server", "internal/cli"},
		{"internal/config", "internal/server"},
		{"internal/inspect", "internal/config"},
		{"internal/inspect", "internal/server"},
		{"internal/inspect", "internal/cli"},
	}
	imports := depstest.Imports(t, "./internal/...")
	require.Contains(t, imports, mod+"internal/inspect", "the listing is the module's")
	for pkg, imps := range imports {
		for _, r := range rules {
			if !depstest.Under(pkg, mod+r.from) {
				continue
			}
			for _, imp := range imps {
				require.False(t, depstest.Under(imp, mod+r.to), "%s imports %s", pkg, imp)
			}
		}
	}
}

// TestNoUntypedHooksSetInInit: no package's init sets a function variable
// that takes an untyped (any) value to be asserted to its real type: a
// package reaches another's through typed values and calls.
func TestNoUntypedHooksSetInInit(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && (d.Name() == "testdata" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != ".":
			return filepath.SkipDir
		case d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go"):
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || fn.Name.Name != "init" || fn.Body == nil {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				as, ok := n.(*ast.AssignStmt)
				if !ok {
					return true
				}
				for _, rhs := range as.Rhs {
					lit, ok := rhs.(*ast.FuncLit)
					if !ok {
						continue
					}
					for _, p := range lit.Type.Params.List {
						require.False(t, isAny(p.Type), "%s: init sets a function variable taking an untyped value", fset.Position(lit.Pos()))
					}
				}
				return true
			})
		}
		return nil
	})
	require.NoError(t, err)
	require.Greater(t, files, 100, "the walk reads the module's files")
}

// isAny reports whether a parameter's type is written any or interface{}.
func isAny(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name == "any"
	case *ast.InterfaceType:
		return e.Methods == nil || len(e.Methods.List) == 0
	}
	return false
}

// TestUpstreamLinksNoAdapter: the upstream pool implements the adapter's
// Peer-facing and catalog interfaces from the leaf both import, so the
// MCP client side never links the governed server.
func TestUpstreamLinksNoAdapter(t *testing.T) {
	t.Parallel()
	deps := depstest.DepsOf(t, "./upstream")
	require.Contains(t, deps, "github.com/toolgate/toolgate/upstream", "the listing is upstream's")
	depstest.RefusePrefixes(t, deps, "upstream", "github.com/toolgate/toolgate/mcpadapter")
}

// TestPluginsLinkNoEngine: the vocabulary plug-ins import (hooks) and the
// plug-ins themselves read decisions as toolcall's values, so none links
// the engine, the adapter or OPA's evaluator.
func TestPluginsLinkNoEngine(t *testing.T) {
	t.Parallel()
	for _, pkg := range []string{"hooks", "hooks/audit", "hooks/ledger", "metrics", "decisionlog"} {
		t.Run(pkg, func(t *testing.T) {
			t.Parallel()
			deps := depstest.DepsOf(t, "./"+pkg)
			require.Contains(t, deps, "github.com/toolgate/toolgate/"+pkg, "the listing is %s's", pkg)
			depstest.RefusePrefixes(t, deps, pkg,
				"github.com/toolgate/toolgate/engine",
				"github.com/toolgate/toolgate/mcpadapter",
				"github.com/open-policy-agent/opa/v1/rego",
				"github.com/open-policy-agent/opa/v1/topdown",
				"github.com/open-policy-agent/opa/v1/storage",
			)
		})
	}
}
