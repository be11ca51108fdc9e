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
		assert.Equal(t, []string{"up.crash", "up.echo", "up.fail", "up.hello", "up.slow"}, names)

		hello := byName["up.hello"]
		assert.Equal(t, "upstream:up/hello", hello.Method)
		assert.Equal(t, "Hello", hello.Title)
		assert.Equal(t, "Greets someone.", hello.Description)
		assert.Equal(t, true, hello.Annotations["readOnlyHint"])
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
	_, _, err := importRow("s", mcpTool("needs", `{"type":"object","properties":{"x":{"anyOf":[{"type":"string"}]}},"required":["x"]}`))
	assert.ErrorContains(t, err, `required argument "x"`)
	_, _, err = importRow("s", mcpTool("needs", `{"type":"object","properties":{"bad-name":{"type":"string"}},"required":["bad-name"]}`))
	assert.Error(t, err)
	_, _, err = importRow("s", mcpTool("needs", `{"type":"object","required":["ghost"]}`))
	assert.Error(t, err, "a required property without a schema")

	row, notes, err := importRow("s", mcpTool("lax", `{"type":"object","properties":{"p":{"type":"string","pattern":"(?<=a)b"},"n":{"type":"number","minimum":0.5}}}`))
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

func numPtr(s string) *json.Number { n := json.Number(s); return &n }

func mcpTool(name, schema string) *mcp.Tool {
	var s map[string]any
	if err := json.Unmarshal([]byte(schema), &s); err != nil {
		panic(err)
	}
	return &mcp.Tool{Name: name, InputSchema: s}
}
