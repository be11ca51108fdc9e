package registry_test

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/registry"
)

func fixture(name string) string { return filepath.Join("testdata", "registry", name) }

func TestLoadValid(t *testing.T) {
	t.Parallel()
	for _, file := range []string{"valid.yaml", "valid.json"} {
		t.Run(file, func(t *testing.T) {
			t.Parallel()
			r, err := registry.Load(fixture(file))
			require.NoError(t, err)
			require.Empty(t, r.Warnings())

			names := make([]string, len(r.Tools))
			for i, tool := range r.Tools {
				names[i] = tool.Name
			}
			require.Equal(t, []string{"getReward", "price", "execUrl", "remote.search"}, names, "rows keep file order")
			require.Equal(t, []string{"manager", "admin"}, r.Sections["rewards"].Roles)

			g := r.Tool("getReward")
			require.NotNil(t, g)
			require.Equal(t, "demo.getReward", g.Method)
			require.Equal(t, "rewards", g.Section)
			require.Equal(t, "Get a reward", g.Title)
			require.Equal(t, map[string]any{"readOnlyHint": true}, g.Annotations)
			require.Equal(t, []string{"idReward", "note"}, argNames(g), "arguments keep declared order")
			require.True(t, g.Arguments[0].Required)
			require.Equal(t, json.Number("1"), *g.Arguments[0].Minimum)
			require.JSONEq(t, `""`, string(g.Arguments[1].Default))

			p := r.Tool("price")
			require.Equal(t, []string{"price", "big", "mode", "tags", "ratio", "dry", "extra"}, argNames(p))
			require.JSONEq(t, `{"amount":"12.50","currency":"EUR"}`, string(p.Arguments[0].Default))
			require.Equal(t, "9007199254740993", string(p.Arguments[1].Default), "ints stay exact")
			require.Equal(t, "url", r.Tool("execUrl").Driver)
			require.Equal(t, "upstream:docs/search", r.Tool("remote.search").Method)
			require.Nil(t, r.Tool("nope"))
		})
	}
}

func TestLoadYAMLAndJSONAgree(t *testing.T) {
	t.Parallel()
	y, err := registry.Load(fixture("valid.yaml"))
	require.NoError(t, err)
	j, err := registry.Load(fixture("valid.json"))
	require.NoError(t, err)
	yb, _ := json.Marshal(y)
	jb, _ := json.Marshal(j)
	require.JSONEq(t, string(jb), string(yb))
}

func TestFiveMistakes(t *testing.T) {
	t.Parallel()
	r, err := registry.Load(fixture("five-mistakes.yaml"))
	require.Nil(t, r, "a bad file is refused whole")
	var ve *registry.ValidationError
	require.ErrorAs(t, err, &ve)
	require.ErrorIs(t, err, registry.ErrInvalid)
	require.Equal(t, fixture("five-mistakes.yaml"), ve.File)
	require.Equal(t, []registry.Problem{
		{Row: 0, Tool: "getReward", Field: "arguments[0].type", Message: `unknown type "Mony" (did you mean "Money"?)`},
		{Row: 1, Tool: "echo", Field: "", Message: `missing required field "method"`},
		{Row: 2, Tool: "getReward", Field: "name", Message: `duplicate tool name "getReward" (also tools[0])`},
		{Row: 3, Tool: "add", Field: "arguments[0]", Message: "required: true and default exclude each other (an argument with a default is never missing)"},
		{Row: 4, Tool: "count", Field: "", Message: `unknown field "descripton" (did you mean "description"?)`},
	}, ve.Problems)
	require.Equal(t, `registry testdata/registry/five-mistakes.yaml: 5 problems
tools[0] (getReward): arguments[0].type: unknown type "Mony" (did you mean "Money"?)
tools[1] (echo): missing required field "method"
tools[2] (getReward): name: duplicate tool name "getReward" (also tools[0])
tools[3] (add): arguments[0]: required: true and default exclude each other (an argument with a default is never missing)
tools[4] (count): unknown field "descripton" (did you mean "description"?)`, filepath.ToSlash(err.Error()))
}

// TestProblems pins the message of every check, schema and semantic, by the
// rendered problem lines.
func TestProblems(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		doc  string
		want []string
	}{
		{"root not an object", `[1, 2]`, []string{"must be an object"}},
		{"empty document", ``, []string{"must be an object"}},
		{"no tools", `sections: {}`, []string{`missing required field "tools"`}},
		{"unknown top-level field", `{tools: [], tool: []}`, []string{`unknown field "tool" (did you mean "tools"?)`}},
		{"history per not a duration", `{history: {per: 10x, max: 5}, tools: []}`, []string{`history.per: "10x" is not a positive duration such as "10m" or "24h"`}},
		{"history max above 1000", `{history: {per: 1h, max: 1001}, tools: []}`, []string{`history.max: must be <= 1000 but found 1001`}},
		{"history without max", `{history: {per: 1h}, tools: []}`, []string{`history: missing required field "max"`}},
		{"remember not names", `tools: [{name: t, method: m, remember: [1]}]`, []string{`tools[0] (t): remember[0]: must be a string`}},
		{"history and remember", `{history: {per: 10m, max: 3}, tools: [{name: t, method: m, remember: [id]}]}`, nil},
		{"tools not an array", `tools: {}`, []string{"tools: must be an array"}},
		{"row not an object", `tools: [x]`, []string{"tools[0]: must be an object"}},
		{"section roles not an array", `{sections: {rewards: {roles: admin}}, tools: []}`, []string{"sections.rewards.roles: must be an array"}},
		{"section without roles", `{sections: {rewards: {}}, tools: []}`, []string{`sections.rewards: missing required field "roles"`}},
		{"empty role", `{sections: {rewards: {roles: [""]}}, tools: []}`, []string{`sections.rewards.roles[0]: must not be empty`}},
		{"odd section name", `{sections: {"a b": {roles: 1}}, tools: []}`, []string{`sections["a b"].roles: must be an array`}},
		{"missing name", `tools: [{method: m}]`, []string{`tools[0]: missing required field "name"`}},
		{"bad name", `tools: [{name: "a b", method: m}]`, []string{`tools[0] (a b): name: must be 1 to 128 letters, digits, "_", "." or "-"`}},
		{"long name", `tools: [{name: ` + strings.Repeat("a", 129) + `, method: m}]`, []string{`tools[0] (` + strings.Repeat("a", 129) + `): name: must be 1 to 128 letters, digits, "_", "." or "-"`}},
		{"name not a string", `tools: [{name: 7, method: m}]`, []string{`tools[0]: name: must be a string`}},
		{"empty method", `tools: [{name: t, method: ""}]`, []string{`tools[0] (t): method: must be NAME (a Go tool method) or upstream:SERVER/TOOL`, `tools[0] (t): method: must not be empty`}},
		{"bad upstream method", `tools: [{name: t, method: "upstream:srv"}]`, []string{`tools[0] (t): method: must be NAME (a Go tool method) or upstream:SERVER/TOOL`}},
		{"bad driver", `tools: [{name: t, method: m, driver: ftp}]`, []string{`tools[0] (t): driver: must be one of "url"`}},
		{"empty section", `tools: [{name: t, method: m, section: ""}]`, []string{`tools[0] (t): section: must not be empty`}},
		{"annotations not an object", `tools: [{name: t, method: m, annotations: [1]}]`, []string{`tools[0] (t): annotations: must be an object`}},
		{"arguments not an array", `tools: [{name: t, method: m, arguments: {}}]`, []string{`tools[0] (t): arguments: must be an array`}},
		{"argument without type", `tools: [{name: t, method: m, arguments: [{name: a}]}]`, []string{`tools[0] (t): arguments[0]: missing required field "type"`}},
		{"argument bad name", `tools: [{name: t, method: m, arguments: [{name: 1a, type: int}]}]`, []string{`tools[0] (t): arguments[0].name: must be an identifier: a letter or "_", then letters, digits or "_" (at most 128)`}},
		{"argument unknown field", `tools: [{name: t, method: m, arguments: [{name: a, type: int, requried: true}]}]`, []string{`tools[0] (t): arguments[0]: unknown field "requried" (did you mean "required"?)`}},
		{"required not a bool", `tools: [{name: t, method: m, arguments: [{name: a, type: int, required: "yes"}]}]`, []string{`tools[0] (t): arguments[0].required: must be a boolean`}},
		{"minimum not a number", `tools: [{name: t, method: m, arguments: [{name: a, type: int, minimum: "1"}]}]`, []string{`tools[0] (t): arguments[0].minimum: must be a number`}},
		{"empty enum", `tools: [{name: t, method: m, arguments: [{name: a, type: int, enum: []}]}]`, []string{`tools[0] (t): arguments[0].enum: must have at least 1 items`}},
		{"duplicate tool", `tools: [{name: t, method: m}, {name: u, method: m}, {name: t, method: m}]`, []string{`tools[2] (t): name: duplicate tool name "t" (also tools[0])`}},
		{"duplicate argument", `tools: [{name: t, method: m, arguments: [{name: a, type: int}, {name: a, type: string}]}]`, []string{`tools[0] (t): arguments[1].name: duplicate argument name "a" (also arguments[0])`}},
		{"required and default", `tools: [{name: t, method: m, arguments: [{name: a, type: int, required: true, default: 1}]}]`, []string{`tools[0] (t): arguments[0]: required: true and default exclude each other (an argument with a default is never missing)`}},
		{"required false and default", `tools: [{name: t, method: m, arguments: [{name: a, type: int, required: false, default: 1}]}]`, nil},
		{"unknown type", `tools: [{name: t, method: m, arguments: [{name: a, type: Mony}]}]`, []string{`tools[0] (t): arguments[0].type: unknown type "Mony" (did you mean "Money"?)`}},
		{"unknown type, far", `tools: [{name: t, method: m, arguments: [{name: a, type: Date}]}]`, []string{`tools[0] (t): arguments[0].type: unknown type "Date" (want one of int, float, string, bool, array, object, Money)`}},
		{"type is case-sensitive", `tools: [{name: t, method: m, arguments: [{name: a, type: Int}]}]`, []string{`tools[0] (t): arguments[0].type: unknown type "Int" (did you mean "int"?)`}},
		{"int default float", `tools: [{name: t, method: m, arguments: [{name: a, type: int, default: 1.5}]}]`, []string{`tools[0] (t): arguments[0].default: must be an integer`}},
		{"int default 1.0", `tools: [{name: t, method: m, arguments: [{name: a, type: int, default: 1.0}]}]`, []string{`tools[0] (t): arguments[0].default: must be an integer`}},
		{"int default string", `tools: [{name: t, method: m, arguments: [{name: a, type: int, default: "1"}]}]`, []string{`tools[0] (t): arguments[0].default: must be an integer`}},
		{"int default huge", `tools: [{name: t, method: m, arguments: [{name: a, type: int, default: 123456789012345678901234567890}]}]`, nil},
		{"int default hex", `tools: [{name: t, method: m, arguments: [{name: a, type: int, default: 0x1F}]}]`, nil},
		{"float default int", `tools: [{name: t, method: m, arguments: [{name: a, type: float, default: 2}]}]`, nil},
		{"float default string", `tools: [{name: t, method: m, arguments: [{name: a, type: float, default: x}]}]`, []string{`tools[0] (t): arguments[0].default: must be a number`}},
		{"string default number", `tools: [{name: t, method: m, arguments: [{name: a, type: string, default: 5}]}]`, []string{`tools[0] (t): arguments[0].default: must be a string`}},
		{"bool default string", `tools: [{name: t, method: m, arguments: [{name: a, type: bool, default: "true"}]}]`, []string{`tools[0] (t): arguments[0].default: must be a boolean (true or false)`}},
		{"array default object", `tools: [{name: t, method: m, arguments: [{name: a, type: array, default: {}}]}]`, []string{`tools[0] (t): arguments[0].default: must be an array`}},
		{"object default array", `tools: [{name: t, method: m, arguments: [{name: a, type: object, default: []}]}]`, []string{`tools[0] (t): arguments[0].default: must be an object`}},
		{"null default", `tools: [{name: t, method: m, arguments: [{name: a, type: string, default: null}]}]`, []string{`tools[0] (t): arguments[0].default: must be a string`}},
		{"Money default", `tools: [{name: t, method: m, arguments: [{name: p, type: Money, default: {amount: "1.5", currency: EUR}}]}]`, nil},
		{"Money default wrong", `tools: [{name: t, method: m, arguments: [{name: p, type: Money, default: {amount: 1.5, currency: eur}}]}]`, []string{
			`tools[0] (t): arguments[0].default.amount: must be a string`,
			`tools[0] (t): arguments[0].default.currency: must match the pattern ^[A-Z]{3}$`,
		}},
		{"Money default incomplete", `tools: [{name: t, method: m, arguments: [{name: p, type: Money, default: {amount: "1"}}]}]`, []string{`tools[0] (t): arguments[0].default: missing required field "currency"`}},
		{"default outside enum", `tools: [{name: t, method: m, arguments: [{name: a, type: string, enum: [x, y], default: z}]}]`, []string{`tools[0] (t): arguments[0].default: must be one of "x", "y"`}},
		{"default below minimum", `tools: [{name: t, method: m, arguments: [{name: a, type: int, minimum: 1, default: 0}]}]`, []string{`tools[0] (t): arguments[0].default: must be >= 1 but found 0`}},
		{"enum value of wrong type", `tools: [{name: t, method: m, arguments: [{name: a, type: int, enum: [1, two]}]}]`, []string{`tools[0] (t): arguments[0].enum[1]: must be an integer`}},
		{"bad pattern", `tools: [{name: t, method: m, arguments: [{name: a, type: string, pattern: "("}]}]`, []string{"tools[0] (t): arguments[0].pattern: not a valid regular expression: missing closing ): `(`"}},
		{"bad items", `tools: [{name: t, method: m, arguments: [{name: a, type: array, items: {type: 5}}]}]`, []string{`tools[0] (t): arguments[0].items: not a valid JSON Schema`}},
		{"unknown section is no error", `{sections: {}, tools: [{name: t, method: m, section: nope}]}`, nil},
		{"many problems in one row, in field order", `tools: [{name: t, method: "", driver: x, arguments: [{name: a, type: X}]}]`, []string{
			`tools[0] (t): method: must be NAME (a Go tool method) or upstream:SERVER/TOOL`,
			`tools[0] (t): method: must not be empty`,
			`tools[0] (t): driver: must be one of "url"`,
			`tools[0] (t): arguments[0].type: unknown type "X" (want one of int, float, string, bool, array, object, Money)`,
		}},
		{"rows in order past 10", `tools: [` + strings.Repeat(`{name: t, method: m},`, 11) + `]`, func() []string {
			var out []string
			for i := 1; i <= 10; i++ {
				out = append(out, `tools[`+itoa(i)+`] (t): name: duplicate tool name "t" (also tools[0])`)
			}
			return out
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := parseProblems(t, tt.doc, "yaml", tt.want != nil)
			for i := range got {
				require.NotContains(t, got[i], "http", "no schema URL reaches a message")
				require.NotContains(t, got[i], "#/", "no schema location reaches a message")
			}
			if tt.want != nil {
				require.Equal(t, tt.want, got)
			}
		})
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func TestWarnings(t *testing.T) {
	t.Parallel()
	r, err := registry.Load(fixture("unknown-section.yaml"))
	require.NoError(t, err)
	require.Equal(t, []registry.Problem{
		{Row: 1, Tool: "report", Field: "section", Message: `section "reprots" is not in sections: the row grants nobody`},
	}, r.Warnings())
	require.Equal(t, "reprots", r.Tool("report").Section)
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, format, doc string
		line              int
		contains          string
	}{
		{"yaml syntax", "yaml", "tools: [\n", 0, "did not find expected"},
		{"yaml duplicate key", "yaml", "tools: []\nsections: {}\ntools: []\n", 3, `duplicate key "tools"`},
		{"yaml infinity", "yaml", "tools: [{name: t, method: m, arguments: [{name: a, type: float, default: .inf}]}]", 1, "not a JSON number"},
		{"yaml complex key", "yaml", "? [a]\n: b\n", 1, "must be a scalar"},
		{"yaml custom tag", "yaml", "tools: !foo bar", 1, "unsupported YAML tag"},
		{"json syntax", "json", "{\n\"tools\": [,]}", 2, "invalid character"},
		{"json duplicate key", "json", `{"tools": [], "tools": []}`, 1, `duplicate key "tools"`},
		{"json trailing data", "json", `{"tools": []} {}`, 1, "after the document"},
		{"json truncated", "json", `{"tools": [`, 1, "unexpected EOF"},
		{"json deep", "json", strings.Repeat("[", 300) + strings.Repeat("]", 300), 1, "nested deeper"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, err := registry.Parse([]byte(tt.doc), tt.format)
			require.Nil(t, r)
			var pe *registry.ParseError
			require.ErrorAs(t, err, &pe)
			require.Equal(t, tt.format, pe.Format)
			require.Equal(t, tt.line, pe.Line)
			require.Contains(t, err.Error(), tt.contains)
			require.NotErrorIs(t, err, registry.ErrInvalid)
		})
	}
}

func TestParseFormats(t *testing.T) {
	t.Parallel()
	doc := []byte(`{"tools": [{"name": "t", "method": "m"}]}`)
	for _, f := range []string{"yaml", "yml", ".yaml", "YAML", "json", ".json", ""} {
		r, err := registry.Parse(doc, f)
		require.NoError(t, err, f)
		require.Equal(t, "m", r.Tool("t").Method)
	}
	_, err := registry.Parse(doc, "toml")
	require.ErrorContains(t, err, `unknown format "toml"`)
}

func TestLoadMissingFile(t *testing.T) {
	t.Parallel()
	r, err := registry.Load(fixture("does-not-exist.yaml"))
	require.Nil(t, r)
	require.ErrorIs(t, err, fs.ErrNotExist)
}

func TestLoadParseErrorNamesFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, writeFile(path, "{"))
	_, err := registry.Load(path)
	var pe *registry.ParseError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, path, pe.File)
	require.Equal(t, "json", pe.Format)
}

func TestLoadUnknownExtensionIsYAML(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "registry.conf")
	require.NoError(t, writeFile(path, "tools:\n  - {name: t, method: m}\n"))
	r, err := registry.Load(path)
	require.NoError(t, err)
	require.NotNil(t, r.Tool("t"))
}

func TestYAMLNumbersStayExact(t *testing.T) {
	t.Parallel()
	tests := []struct{ yaml, want string }{
		{"9007199254740993", "9007199254740993"},
		{"-9007199254740993", "-9007199254740993"},
		{"123456789012345678901234567890", "123456789012345678901234567890"},
		{"0x1F", "31"},
		{"0o17", "15"},
		{"1_000", "1000"},
		{"+7", "7"},
		{"0.1", "0.1"},
		{"1e3", "1e3"},
		{".5", "0.5"},
	}
	for _, tt := range tests {
		t.Run(tt.yaml, func(t *testing.T) {
			t.Parallel()
			r, err := registry.Parse([]byte("tools: [{name: t, method: m, arguments: [{name: a, type: float, default: "+tt.yaml+"}], annotations: {n: "+tt.yaml+"}}]"), "yaml")
			require.NoError(t, err)
			require.Equal(t, tt.want, string(r.Tools[0].Arguments[0].Default))
			require.Equal(t, json.Number(tt.want), r.Tools[0].Annotations["n"])
		})
	}
}

func TestYAMLAnchorsAndMerge(t *testing.T) {
	t.Parallel()
	doc := `
base: &base { method: demo.echo, section: s }
tools:
  - { <<: *base, name: a }
  - { <<: *base, name: b, method: demo.add }
`
	// base is not a registry field: the schema refuses it, which shows the
	// anchors were read; the rows below use a valid document.
	_, err := registry.Parse([]byte(doc), "yaml")
	require.ErrorContains(t, err, `unknown field "base"`)

	doc = `
tools:
  - &a { name: a, method: demo.echo, arguments: [&arg { name: text, type: string }] }
  - { <<: *a, name: b, arguments: [*arg] }
`
	r, err := registry.Parse([]byte(doc), "yaml")
	require.NoError(t, err)
	require.Equal(t, "demo.echo", r.Tool("b").Method)
	require.Equal(t, "text", r.Tool("b").Arguments[0].Name)
}

func TestYAMLBillionLaughs(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 10; i++ {
		b.WriteString("a" + itoa(i) + ": &a" + itoa(i) + " [")
		for j := 0; j < 10; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*a" + itoa(i-1))
		}
		b.WriteString("]\n")
	}
	r, err := registry.Parse([]byte(b.String()), "yaml")
	require.Nil(t, r)
	var pe *registry.ParseError
	require.ErrorAs(t, err, &pe)
	require.ErrorContains(t, err, "aliases expand to more than")
}

func TestToolIndex(t *testing.T) {
	t.Parallel()
	r, err := registry.Parse([]byte(`tools: [{name: a, method: m}, {name: b, method: n}]`), "yaml")
	require.NoError(t, err)
	require.Same(t, &r.Tools[1], r.Tool("b"))
	require.Nil(t, r.Tool("c"))

	// A Registry built by hand has no index: Tool still finds rows.
	hand := &registry.Registry{Tools: []registry.Tool{{Name: "x", Method: "m"}}}
	require.Same(t, &hand.Tools[0], hand.Tool("x"))
	require.Nil(t, hand.Tool("y"))

	var none *registry.Registry
	require.Nil(t, none.Tool("x"))
	require.Nil(t, none.Warnings())
}

func TestValidationErrorRendering(t *testing.T) {
	t.Parallel()
	one := &registry.ValidationError{Problems: []registry.Problem{{Row: -1, Field: "sections.a.roles", Message: "must be an array"}}}
	require.Equal(t, "registry: 1 problem\nsections.a.roles: must be an array", one.Error())
	require.True(t, errors.Is(one, registry.ErrInvalid))
	require.Equal(t, "tools[3]: arguments[0].type: x", registry.Problem{Row: 3, Field: "arguments[0].type", Message: "x"}.String())
	require.Equal(t, "must be an object", registry.Problem{Row: -1, Message: "must be an object"}.String())
}

func writeFile(path, data string) error { return os.WriteFile(path, []byte(data), 0o600) }

func argNames(t *registry.Tool) []string {
	out := make([]string, len(t.Arguments))
	for i, a := range t.Arguments {
		out[i] = a.Name
	}
	return out
}

// parseProblems parses doc (in format). When refused, it requires the
// registry refused with a ValidationError and returns its problems as
// text, in order; otherwise it requires a registry and returns nil.
func parseProblems(t *testing.T, doc, format string, refused bool) []string {
	t.Helper()
	r, err := registry.Parse([]byte(doc), format)
	if !refused {
		require.NoError(t, err)
		require.NotNil(t, r)
		return nil
	}
	require.Nil(t, r)
	var ve *registry.ValidationError
	require.ErrorAs(t, err, &ve)
	got := make([]string, len(ve.Problems))
	for i, p := range ve.Problems {
		got[i] = p.String()
	}
	return got
}
