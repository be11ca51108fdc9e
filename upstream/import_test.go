package upstream

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/testkit/testserver"
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
		require.NotNil(t, hello.Imported)
		assert.Equal(t, "up", hello.Imported.Upstream)
		assert.Equal(t, map[string]any{"readOnlyHint": true, "idempotentHint": false}, hello.Imported.Annotations)
		assert.Nil(t, byName["up.fail"].Imported.Annotations, "no annotations declared")
		assert.Equal(t, []registry.Argument{{Name: "name", Type: "string", Required: true}}, hello.Arguments)

		// The definition as listed (docs/contract.md §19): every property
		// named, none dropped, the schema kept whole.
		echo := byName["up.echo"]
		assert.JSONEq(t, testserver.EchoSchema, string(echo.Imported.InputSchema))
		assert.JSONEq(t, testserver.EchoSchema, mustJSON(t, echo.InputSchema()), "what tools/list shows and calls are checked against")
		assert.Equal(t, []registry.Argument{
			{Name: "label", Type: "string", Required: true},
			{Name: "count", Type: "int", Required: true},
			{Name: "anyhow"},
			{Name: "bad-name", Type: "string"},
			{Name: "color"},
			{Name: "flag", Type: "bool"},
			{Name: "maybe", Type: "string"},
			{Name: "opts", Type: "object"},
			{Name: "ratio", Type: "float"},
			{Name: "tags", Type: "array"},
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
	_, _, err := importRow(&Config{Name: "s"}, mcpTool("far", `{"type":"object","properties":{"x":{"$ref":"https://example.com/x.json"}}}`), nil)
	assert.ErrorContains(t, err, "inputSchema cannot be checked", "a $ref outside the schema is never fetched")
	_, _, err = importRow(&Config{Name: "s"}, mcpTool("odd", `{"$schema":"https://example.com/my-dialect","type":"object"}`), nil)
	assert.ErrorContains(t, err, "inputSchema cannot be checked", "a dialect toolgate does not know")
	_, _, err = importRow(&Config{Name: "s"}, mcpTool("bad name", `{"type":"object"}`), nil)
	assert.ErrorContains(t, err, "row name")

	// What rows could not declare is kept (docs/contract.md §19).
	for _, schema := range []string{
		`{"type":"object","properties":{"x":{"anyOf":[{"type":"string"}]}},"required":["x"]}`,
		`{"type":"object","properties":{"bad-name":{"type":"string"}},"required":["bad-name"]}`,
		`{"type":"object","required":["ghost"]}`,
		`{"type":"object","properties":{"p":{"type":"string","pattern":"(?<=a)b"},"n":{"type":"number","minimum":0.5}}}`,
		`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","definitions":{"D":{"type":"string"}},"properties":{"d":{"$ref":"#/definitions/D"}}}`,
	} {
		row, _, err := importRow(&Config{Name: "s"}, mcpTool("kept", schema), nil)
		require.NoError(t, err, schema)
		assert.JSONEq(t, schema, string(row.Imported.InputSchema))
	}
	_, notes, err := importRow(&Config{Name: "s"}, mcpTool("lookbehind", `{"type":"object","properties":{"p":{"type":"string","pattern":"(?<=a)b"}}}`), nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"inputSchema /properties/p/pattern: a regular expression Go cannot run is left to the upstream to check"}, notes)
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
			row, _, err := importRow(&tc.cfg, tool, nil)
			require.NoError(t, err)
			assert.Equal(t, tc.section, row.Section)
			assert.Equal(t, tc.annotations, row.Annotations)
			assert.Equal(t, &registry.Imported{Upstream: "files", Annotations: declared, InputSchema: json.RawMessage(`{"type":"object"}`)}, row.Imported)
			assert.Empty(t, row.Title, "the title as listed: the annotations' title stays theirs (docs/contract.md §19)")
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

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

func mcpTool(name, schema string) *mcp.Tool {
	var s map[string]any
	if err := json.Unmarshal([]byte(schema), &s); err != nil {
		panic(err)
	}
	return &mcp.Tool{Name: name, InputSchema: s}
}
