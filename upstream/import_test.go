package upstream

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/registry"
)

func TestImportedRows(t *testing.T) {
	t.Parallel()
	transports(t, func(t *testing.T, cfg Config) {
		cfg.Import = true
		plain := cfg
		plain.Name = "plain"
		plain.Import = false
		p := newPool(t, cfg, plain)
		rows := p.ImportedRows(t.Context())

		byName := map[string]registry.Tool{}
		var names []string
		for _, r := range rows {
			byName[r.Name] = r
			names = append(names, r.Name)
		}
		// Upstream order (the go-sdk lists by name); the 126-character name is skipped (up.+126 > 128);
		// plain is not imported.
		assert.Equal(t, []string{"up.crash", "up.echo", "up.fail", "up.hello", "up.interact", "up.slow"}, names)

		hello := byName["up.hello"]
		assert.Equal(t, "upstream:up/hello", hello.Method)
		assert.Equal(t, "Hello", hello.Title)
		assert.Equal(t, "Greets someone.", hello.Description)
		assert.Equal(t, "upstream:up", hello.Section, "closed by default")
		assert.Nil(t, hello.Annotations, "the upstream's annotations are not trusted by default")
		assert.Equal(t, &registry.Imported{Upstream: "up", Annotations: map[string]any{"readOnlyHint": true, "idempotentHint": false}}, hello.Imported)
		assert.Equal(t, &registry.Imported{Upstream: "up"}, byName["up.fail"].Imported, "no annotations declared")
		assert.Equal(t, []registry.Argument{{Name: "name", Type: "string", Required: true, Description: "who to greet"}}, hello.Arguments)

		echo := byName["up.echo"]
		num := func(s string) *json.Number { n := json.Number(s); return &n }
		assert.Equal(t, []registry.Argument{
			{Name: "label", Type: "string", Required: true, Pattern: "^[a-z]+$"},
			{Name: "count", Type: "int", Required: true, Description: "how many", Minimum: num("1"), Maximum: num("10")},
			{Name: "color", Type: "string", Enum: []json.RawMessage{json.RawMessage(`"red"`), json.RawMessage(`"green"`)}},
			{Name: "flag", Type: "bool"},
			{Name: "maybe", Type: "string"},
			{Name: "opts", Type: "object"},
			{Name: "ratio", Type: "float"},
			{Name: "tags", Type: "array"},
			// anyhow (anyOf) and bad-name cannot be declared: dropped.
		}, echo.Arguments)
		assert.Empty(t, byName["up.fail"].Arguments)

		// Imported rows run like any other.
		res, err := call(t.Context(), t, p, echo.Method, map[string]any{"label": "a", "count": 2})
		require.NoError(t, err)
		assert.JSONEq(t, `{"label":"a","count":2}`, textOf(t, res))
	})
}

func TestImportRowSkips(t *testing.T) {
	t.Parallel()
	_, _, err := importRow(&Config{Name: "s"}, mcpTool("needs", `{"type":"object","properties":{"x":{"anyOf":[{"type":"string"}]}},"required":["x"]}`))
	assert.ErrorContains(t, err, `required argument "x"`)
	_, _, err = importRow(&Config{Name: "s"}, mcpTool("needs", `{"type":"object","properties":{"bad-name":{"type":"string"}},"required":["bad-name"]}`))
	assert.Error(t, err)
	_, _, err = importRow(&Config{Name: "s"}, mcpTool("needs", `{"type":"object","required":["ghost"]}`))
	assert.Error(t, err, "a required property without a schema")

	row, notes, err := importRow(&Config{Name: "s"}, mcpTool("lax", `{"type":"object","properties":{"p":{"type":"string","pattern":"(?<=a)b"},"n":{"type":"number","minimum":0.5}}}`))
	require.NoError(t, err)
	assert.Len(t, notes, 1, "the lookbehind pattern is not carried")
	assert.Equal(t, []registry.Argument{{Name: "n", Type: "float", Minimum: numPtr("0.5")}, {Name: "p", Type: "string"}}, row.Arguments)
}

func TestMergeRows(t *testing.T) {
	t.Parallel()
	reg, err := registry.Parse([]byte(`
sections: {admin: {roles: [admin]}}
tools:
  - {name: up.hello, method: demo.echo}
  - {name: greet, method: "upstream:up/fail", section: admin}
`), registry.FormatYAML)
	require.NoError(t, err)
	imported := []registry.Tool{
		{Name: "up.hello", Method: "upstream:up/hello"},
		{Name: "up.fail", Method: "upstream:up/fail"},
		{Name: "up.echo", Method: "upstream:up/echo", Arguments: []registry.Argument{{Name: "label", Type: "string", Required: true}}},
	}
	merged := MergeRows(reg, imported)

	var names []string
	for _, r := range merged.Tools {
		names = append(names, r.Name)
	}
	assert.Equal(t, []string{"up.hello", "greet", "up.echo"}, names)
	assert.Equal(t, "demo.echo", merged.Tool("up.hello").Method, "the registry's row wins")
	assert.Equal(t, reg.Sections, merged.Sections)
	assert.Len(t, reg.Tools, 2, "input not modified")
	require.NotNil(t, merged.Tool("up.echo"))

	assert.Len(t, MergeRows(nil, imported).Tools, 3)
}

// TestImportRowClosedAndUntrusted: an imported row carries the upstream's
// section (default upstream:NAME) and keeps the upstream's annotations
// apart unless the configuration trusts them (docs/contract.md §15).
func TestImportRowClosedAndUntrusted(t *testing.T) {
	t.Parallel()
	tool := mcpTool("wipe", `{"type":"object"}`)
	tool.Annotations = &mcp.ToolAnnotations{Title: "Wipe", ReadOnlyHint: true}
	declared := map[string]any{"title": "Wipe", "readOnlyHint": true, "idempotentHint": false}
	for _, tc := range []struct {
		name        string
		cfg         Config
		section     string
		annotations map[string]any
	}{
		{"default", Config{Name: "files"}, "upstream:files", nil},
		{"section", Config{Name: "files", Section: "ops"}, "ops", nil},
		{"trusted", Config{Name: "files", TrustAnnotations: true}, "upstream:files", declared},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			row, _, err := importRow(&tc.cfg, tool)
			require.NoError(t, err)
			assert.Equal(t, tc.section, row.Section)
			assert.Equal(t, tc.annotations, row.Annotations)
			assert.Equal(t, &registry.Imported{Upstream: "files", Annotations: declared}, row.Imported)
			assert.Equal(t, "Wipe", row.Title)
		})
	}
}

// TestMergeRowsSections: the section of imported rows may be granted in
// the registry's sections under its upstream:NAME name; one that sections
// does not list is a warning (it grants nobody), never a load error; the
// rows keep what they imported.
func TestMergeRowsSections(t *testing.T) {
	t.Parallel()
	imported := []registry.Tool{
		{Name: "files.wipe", Method: "upstream:files/wipe", Section: "upstream:files",
			Imported: &registry.Imported{Upstream: "files", Annotations: map[string]any{"readOnlyHint": true}}},
		{Name: "mail.send", Method: "upstream:mail/send", Section: "upstream:mail", Imported: &registry.Imported{Upstream: "mail"}},
	}
	reg, err := registry.Parse([]byte(`
sections:
  "upstream:files": { roles: [ops] }
tools:
  - { name: echo, method: demo.echo }
`), registry.FormatYAML)
	require.NoError(t, err)
	merged := MergeRows(reg, imported)
	require.Len(t, merged.Tools, 3)
	assert.Equal(t, imported[0].Imported, merged.Tool("files.wipe").Imported)
	assert.Equal(t, imported[1].Imported, merged.Tool("mail.send").Imported)
	assert.Nil(t, merged.Tool("echo").Imported)
	assert.Equal(t, []string{"ops"}, merged.Sections["upstream:files"].Roles)
	var warned []string
	for _, w := range merged.Warnings() {
		warned = append(warned, w.String())
	}
	require.Len(t, warned, 1)
	assert.Contains(t, warned[0], `section "upstream:mail" is not in sections`)

	_, err = registry.Parse([]byte("tools:\n  - { name: x, method: demo.echo, imported: { upstream: files } }\n"), registry.FormatYAML)
	assert.Error(t, err, "a registry file cannot say a row is imported")
}

func numPtr(s string) *json.Number { n := json.Number(s); return &n }

func mcpTool(name, schema string) *mcp.Tool {
	var s map[string]any
	if err := json.Unmarshal([]byte(schema), &s); err != nil {
		panic(err)
	}
	return &mcp.Tool{Name: name, InputSchema: s}
}
