package registry_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/schema"
)

func TestArgumentSchema(t *testing.T) {
	t.Parallel()
	tests := []struct {
		arg  string // one argument, YAML
		want string // its JSON Schema
	}{
		{`{name: a, type: int}`, `{"type": "integer"}`},
		{`{name: a, type: float}`, `{"type": "number"}`},
		{`{name: a, type: string}`, `{"type": "string"}`},
		{`{name: a, type: bool}`, `{"type": "boolean"}`},
		{`{name: a, type: array}`, `{"type": "array"}`},
		{`{name: a, type: object}`, `{"type": "object"}`},
		{`{name: a, type: int, description: Reward id, default: 9007199254740993, minimum: 1, maximum: 9007199254740993}`,
			`{"type": "integer", "description": "Reward id", "default": 9007199254740993, "minimum": 1, "maximum": 9007199254740993}`},
		{`{name: a, type: string, enum: [x, y], pattern: "^[xy]$"}`, `{"type": "string", "enum": ["x", "y"], "pattern": "^[xy]$"}`},
		{`{name: a, type: array, items: {type: string}}`, `{"type": "array", "items": {"type": "string"}}`},
		{`{name: price, type: Money, description: The price}`, `{
			"title": "Money",
			"description": "The price",
			"type": "object",
			"additionalProperties": false,
			"required": ["amount", "currency"],
			"properties": {
				"amount": {"type": "string", "pattern": "^-?[0-9]+(\\.[0-9]{1,2})?$"},
				"currency": {"type": "string", "pattern": "^[A-Z]{3}$"}
			}}`},
	}
	for _, tt := range tests {
		t.Run(tt.arg, func(t *testing.T) {
			t.Parallel()
			r, err := registry.Parse([]byte(`tools: [{name: t, method: m, arguments: [`+tt.arg+`]}]`), "yaml")
			require.NoError(t, err)
			tool := &r.Tools[0]
			got, err := json.Marshal(tool.Arguments[0].Schema())
			require.NoError(t, err)
			require.JSONEq(t, tt.want, string(got))
			require.Equal(t, tool.Arguments[0].Schema(), tool.ArgumentSchemas()[0], "one source")
			require.Equal(t, tool.Arguments[0].Schema(), tool.InputSchema()["properties"].(map[string]any)[tool.Arguments[0].Name], "one source")
			_, err = schema.CompileValue(tool.Arguments[0].Schema())
			require.NoError(t, err)
		})
	}
}

func TestInputSchema(t *testing.T) {
	t.Parallel()
	r, err := registry.Load(fixture("valid.yaml"))
	require.NoError(t, err)

	got, err := json.Marshal(r.Tool("getReward").InputSchema())
	require.NoError(t, err)
	require.JSONEq(t, `{
		"type": "object",
		"properties": {
			"idReward": {"type": "integer", "description": "Reward id", "minimum": 1},
			"note": {"type": "string", "default": "", "pattern": "^[a-z ]*$"}
		},
		"required": ["idReward"]
	}`, string(got))

	got, err = json.Marshal((&registry.Tool{Name: "none"}).InputSchema())
	require.NoError(t, err)
	require.JSONEq(t, `{"type": "object", "properties": {}}`, string(got), "no required key without required arguments")

	// The schema binds: undeclared arguments pass (they are dropped, not
	// refused); a wrong Money is refused.
	s, err := schema.CompileValue(r.Tool("price").InputSchema())
	require.NoError(t, err)
	require.NoError(t, s.Validate(map[string]any{"price": map[string]any{"amount": "12.50", "currency": "EUR"}, "undeclared": true}))
	require.Error(t, s.Validate(map[string]any{"price": map[string]any{"amount": "12.505", "currency": "EUR"}}))
	require.Error(t, s.Validate(map[string]any{"big": json.Number("1.5")}))
}

func TestInputSchemaIsFresh(t *testing.T) {
	t.Parallel()
	r, err := registry.Load(fixture("valid.yaml"))
	require.NoError(t, err)
	tool := r.Tool("price")
	first := tool.InputSchema()
	first["properties"].(map[string]any)["price"].(map[string]any)["required"] = "scribbled"
	delete(first, "type")
	second := tool.InputSchema()
	require.Equal(t, "object", second["type"])
	require.Equal(t, []any{"amount", "currency"}, second["properties"].(map[string]any)["price"].(map[string]any)["required"])
}

func TestArgumentSchemaUnknownTypeMatchesNothing(t *testing.T) {
	t.Parallel()
	// Only a Registry built by hand can hold an unknown type.
	a := registry.Argument{Name: "a", Type: "Nope"}
	s, err := schema.CompileValue(a.Schema())
	require.NoError(t, err)
	require.Error(t, s.Validate("anything"))
}
