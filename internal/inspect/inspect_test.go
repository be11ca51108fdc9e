package inspect

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/methods"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/toolcall"
)

const baseRegistry = `
sections:
  reports: { roles: [admin] }
tools:
  - { name: echo, method: demo.echo, arguments: [{ name: text, type: string }] }
  - { name: fetch, method: demo.fetch, driver: url }
  - { name: report, method: demo.report, section: reports }
  - { name: up, method: "upstream:svc/tool", arguments: [{ name: q, type: string }] }
`

func source(registryDoc string, policies map[string]string) engine.Source {
	fsys := fstest.MapFS{"registry.yaml": {Data: []byte(registryDoc)}, "rego": {Mode: fs.ModeDir}}
	for name, text := range policies {
		fsys["rego/"+name] = &fstest.MapFile{Data: []byte(text)}
	}
	return engine.Source{FS: fsys, Registry: "registry.yaml", Policies: "rego"}
}

func codes(fs []Finding) []string {
	out := []string{}
	for _, f := range fs {
		out = append(out, f.Code)
	}
	return out
}

func demoMethods() methods.Set {
	m := methods.Map{}
	m.Register("demo.echo", func(_ context.Context, a struct {
		Text string `json:"text"`
	}) (string, error) {
		return a.Text, nil
	})
	m.Register("demo.fetch", func(context.Context, struct{}) (string, error) { return "", nil })
	m.Register("demo.report", func(context.Context, struct{}) (string, error) { return "", nil })
	return m
}

func TestCheck(t *testing.T) {
	t.Parallel()
	decided := "package toolgate.grant\n\nurl_drivers_decided := true\n"
	for _, tc := range []struct {
		name     string
		registry string
		policies map[string]string
		opts     CheckOptions
		errors   []string
		warnings []string
	}{
		{name: "clean without URL drivers", registry: "tools: [{ name: echo, method: demo.echo }]",
			errors: []string{}, warnings: []string{}},
		{name: "base decision grants the driver: undecided for every role set, reach where tools hide",
			registry: baseRegistry,
			errors:   []string{CodeURLUndecided, CodeURLUndecided}, warnings: []string{CodeURLReach}},
		{name: "decided: the reach stays a warning", registry: baseRegistry,
			policies: map[string]string{"grant.rego": decided},
			errors:   []string{}, warnings: []string{CodeURLReach}},
		{name: "an override that never grants the driver", registry: baseRegistry,
			policies: map[string]string{"grant.rego": "package toolgate.grant\n\ngranted := {\"echo\", \"nope\"}\n"},
			errors:   []string{}, warnings: []string{CodeGrantedUnknown}},
		{name: "a failing grant decision, once per caller", registry: baseRegistry,
			policies: map[string]string{"grant.rego": "package toolgate.grant\n\ngranted := 1 / 0 if true\n"},
			opts:     CheckOptions{RoleSets: [][]string{{}, {"admin"}}},
			errors:   []string{CodeGrantFailed, CodeGrantFailed}, warnings: []string{}},
		{name: "methods: unknown method and argument; upstream rows are not checked", registry: baseRegistry,
			policies: map[string]string{"grant.rego": decided},
			opts: CheckOptions{Methods: methods.Map{"demo.echo": demoMethods().(methods.Map)["demo.report"],
				"demo.fetch": demoMethods().(methods.Map)["demo.fetch"]}},
			errors: []string{CodeArgumentUnknown, CodeMethodUnknown}, warnings: []string{CodeURLReach}},
		{name: "invalid registry: its problems and still the policies' diagnostics",
			registry: "tools: [{ name: echo }, { name: 1, method: x }]",
			policies: map[string]string{"grant.rego": "package toolgate.grant\n\ngranted := {x} if nope(x)\n"},
			errors:   []string{CodeRegistryInvalid, CodeRegistryInvalid, CodePolicyCompile}, warnings: []string{}},
		{name: "unparsable registry", registry: "tools: [",
			errors: []string{CodeRegistryParse}, warnings: []string{}},
		{name: "undeclared section", registry: "tools: [{ name: echo, method: demo.echo, section: nowhere }]",
			errors: []string{}, warnings: []string{CodeRegistryWarning}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			opts := tc.opts
			opts.Source = source(tc.registry, tc.policies)
			rep := Check(context.Background(), opts)
			assert.Equal(t, tc.errors, codes(rep.Errors), "errors: %v", rep.Errors)
			assert.Equal(t, tc.warnings, codes(rep.Warnings), "warnings: %v", rep.Warnings)
			assert.Equal(t, len(tc.errors) == 0, rep.OK())
			var buf bytes.Buffer
			require.NoError(t, rep.WriteJSON(&buf))
			var back CheckReport
			require.NoError(t, json.Unmarshal(buf.Bytes(), &back))
			assert.Equal(t, len(rep.Errors), len(back.Errors))
		})
	}
}

func TestCheckReachNamesHiddenTools(t *testing.T) {
	t.Parallel()
	rep := Check(context.Background(), CheckOptions{
		Source:  source(baseRegistry, nil),
		Callers: []toolcall.Caller{{Subject: "sam", Roles: []string{"staff"}}},
	})
	require.Len(t, rep.Warnings, 1)
	w := rep.Warnings[0]
	assert.Equal(t, []string{"report"}, w.Tools)
	assert.Equal(t, "sam", w.Caller.Subject)
	assert.Equal(t, "url_driver_reach: sam (roles: staff): URL driver fetch is granted while 1 tool is hidden; it reaches every page it can name, also theirs: report", w.String())
	require.Len(t, rep.Errors, 1)
	assert.Equal(t, []string{"fetch"}, rep.Errors[0].Tools)
}

// An invalid registry on the operating system's file system: the policies
// are compiled beside a temporary stand-in, and their names stay as given.
func TestCheckInvalidRegistryOnDisk(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	reg := filepath.Join(dir, "registry.yaml")
	require.NoError(t, os.WriteFile(reg, []byte("tools: [{ name: echo }]"), 0o644))
	pol := filepath.Join(dir, "rego")
	require.NoError(t, os.Mkdir(pol, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(pol, "grant.rego"), []byte("package toolgate.grant\n\ngranted := {x} if nope(x)\n"), 0o644))
	rep := Check(context.Background(), CheckOptions{Source: engine.Source{Registry: reg, Policies: pol}})
	require.Equal(t, []string{CodeRegistryInvalid, CodePolicyCompile}, codes(rep.Errors))
	assert.Equal(t, filepath.Join(pol, "grant.rego"), rep.Errors[1].File)
	assert.Equal(t, 3, rep.Errors[1].Line)
	assert.False(t, rep.RegistryLoaded)
}

func TestRoleSets(t *testing.T) {
	t.Parallel()
	reg, err := registry.Parse([]byte("sections: { a: { roles: [y, x] }, b: { roles: [x] } }\ntools: []"), "yaml")
	require.NoError(t, err)
	sets, capped := RoleSets(reg)
	assert.False(t, capped)
	assert.Equal(t, [][]string{{}, {"x"}, {"y"}, {"x", "y"}}, sets)

	var roles []string
	for i := range MaxRoleSetRoles + 1 {
		roles = append(roles, string(rune('a'+i)))
	}
	reg, err = registry.Parse([]byte("sections: { s: { roles: ["+strings.Join(roles, ",")+"] } }\ntools: []"), "yaml")
	require.NoError(t, err)
	sets, capped = RoleSets(reg)
	assert.True(t, capped)
	assert.Len(t, sets, MaxRoleSetRoles+3)
}

func TestParseCallers(t *testing.T) {
	t.Parallel()
	cs, err := ParseCallers([]byte(`[{"subject": "a", "roles": ["x"], "claims": {"n": 12345678901234567890}}, {subject: b}]`))
	require.NoError(t, err)
	require.Len(t, cs, 2)
	assert.Equal(t, json.Number("12345678901234567890"), cs[0].Claims["n"])
	assert.Equal(t, map[string]any{}, cs[1].Claims)
	for _, bad := range []string{"", "- { subject: a, role: [x] }", "- { roles: [x] }", "{subject: a}", "[1"} {
		_, err := ParseCallers([]byte(bad))
		assert.Error(t, err, bad)
	}
}

func TestExplainStages(t *testing.T) {
	t.Parallel()
	src := source(baseRegistry, map[string]string{
		"call.rego": `package toolgate.call

deny contains 7 if input.tool.name == "report"

deny contains "no fetching" if {
	input.tool.name == "fetch"
	input.request.arguments.url == "evil"
}

result := {"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]} if input.request.meta.answer == true
`,
	})
	e, err := engine.New(context.Background(), src, engine.WithTimeout(time.Minute))
	require.NoError(t, err)
	admin := &toolcall.Caller{Subject: "ann", Roles: []string{"admin"}}
	for _, tc := range []struct {
		name, tool, args, meta string
		stage, answer          string
	}{
		{name: "a rule that fails", tool: "report", stage: StageRuleFailed, answer: AnswerInternal},
		{name: "denied by the arguments", tool: "fetch", args: `{"url": "evil"}`, stage: StageDenied, answer: "no fetching"},
		{name: "arguments that are not an object are {}", tool: "fetch", args: `[1]`, stage: StageRun},
		{name: "answered: text items joined", tool: "echo", meta: `{"answer": true}`, stage: StageAnswered, answer: "a\nb"},
		{name: "meta is bounded first: not an object is {}", tool: "echo", meta: `[true]`, stage: StageRun},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			x := Explain(context.Background(), ExplainOptions{Revision: e.Current(), Caller: admin, Tool: tc.tool,
				Arguments: json.RawMessage(tc.args), Meta: json.RawMessage(tc.meta)})
			require.NotNil(t, x.Call)
			assert.Equal(t, tc.stage, x.Call.Stage)
			assert.Equal(t, tc.answer, x.Call.Answer)
			if tc.stage == StageRuleFailed {
				assert.NotEmpty(t, x.Call.Failure)
			}
		})
	}
}

func TestFindingWhere(t *testing.T) {
	t.Parallel()
	f := Finding{Code: CodePolicyCompile, File: "rego/a.rego", Line: 3, Col: 2, Message: "m"}
	assert.Equal(t, "policy_compile: rego/a.rego:3:2: m", f.String())
	f = Finding{Code: CodeMethodUnknown, File: "r.yaml", Row: rowPtr(0), Tool: "echo", Field: "method", Message: "m"}
	assert.Equal(t, "method_unknown: r.yaml: tools[0] (echo): method: m", f.String())
	assert.Equal(t, "x: m", Finding{Code: "x", Message: "m"}.String())
	assert.Equal(t, "nobody", CallerLabel(nil))
}

// TestCheckCatalogRules (docs/contract.md §16): check reports a
// data.toolgate.grant.resource that is no boolean, and a
// data.toolgate.grant.prompts that is no set (the grant decision fails:
// prompts are part of it), for each caller tried.
func TestCheckCatalogRules(t *testing.T) {
	t.Parallel()
	rep := Check(context.Background(), CheckOptions{
		Source:  source(baseRegistry, map[string]string{"r.rego": "package toolgate.grant\n\nresource := \"yes\"\n\nprompts := \"all\"\n"}),
		Callers: []toolcall.Caller{{Subject: "sam", Roles: []string{"staff"}}},
	})
	var codes []string
	for _, e := range rep.Errors {
		codes = append(codes, e.Code)
	}
	assert.Equal(t, []string{CodeResourceFailed, CodeGrantFailed}, codes)
	assert.Contains(t, rep.Errors[0].String(), "resource must be a boolean")
	assert.Contains(t, rep.Errors[1].String(), "prompts must be a set")
}
