package schema_test

import (
	"encoding/json"
	"errors"
	"io/fs"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v5"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/schema"
)

func TestEveryEmbeddedSchemaCompiles(t *testing.T) {
	t.Parallel()
	var names []string
	require.NoError(t, fs.WalkDir(schema.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			names = append(names, p)
		}
		return err
	}))
	require.Contains(t, names, "registry.schema.json")
	require.Contains(t, names, "types/Money.json")
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, err := schema.Compile(name)
			require.NoError(t, err)
			again, err := schema.Compile(name)
			require.NoError(t, err)
			require.Same(t, s, again, "cached")

			var doc map[string]any
			data, err := schema.FS.ReadFile(name)
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(data, &doc))
			require.Equal(t, "https://json-schema.org/draft/2020-12/schema", doc["$schema"])
			require.Equal(t, schema.BaseURL+name, doc["$id"], "$id is where the compiler knows the file")
		})
	}
}

func TestCompileConcurrently(t *testing.T) {
	t.Parallel()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			s, err := schema.Compile("types/Money.json")
			if err != nil || s == nil {
				t.Error("compile failed", err)
			}
		})
	}
	wg.Wait()
}

func TestCompileNotFound(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"nope.json", "types/Nope.json", "../go.mod", "registry.schema", ""} {
		_, err := schema.Compile(name)
		require.ErrorIs(t, err, schema.ErrNotFound, name)
	}
}

func TestTypes(t *testing.T) {
	t.Parallel()
	require.Equal(t, []string{"Money"}, schema.TypeNames())
	raw, ok := schema.TypeSchema("Money")
	require.True(t, ok)
	require.True(t, json.Valid(raw))
	raw[0] = 'X' // the caller's copy
	again, _ := schema.TypeSchema("Money")
	require.Equal(t, byte('{'), again[0])
	require.True(t, schema.IsType("Money"))
	for _, name := range []string{"Nope", "", "..", "../registry.schema", "money", "int"} {
		_, ok := schema.TypeSchema(name)
		require.False(t, ok, name)
	}
	require.Equal(t, "types/Money.json", schema.TypeFile("Money"))
}

// validCase is a JSON document and whether a schema accepts it.
type validCase struct {
	doc   string
	valid bool
}

// requireValid checks each case against s, the document decoded with
// json.Number as Validate wants it.
func requireValid(t *testing.T, s *jsonschema.Schema, cases []validCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.doc, func(t *testing.T) {
			t.Parallel()
			var v any
			dec := json.NewDecoder(strings.NewReader(tt.doc))
			dec.UseNumber()
			require.NoError(t, dec.Decode(&v))
			err := s.Validate(v)
			if tt.valid {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
			}
		})
	}
}

func TestMoney(t *testing.T) {
	t.Parallel()
	s, err := schema.Compile("types/Money.json")
	require.NoError(t, err)
	tests := []validCase{
		{`{"amount": "12.50", "currency": "EUR"}`, true},
		{`{"amount": "12", "currency": "USD"}`, true},
		{`{"amount": "-0.5", "currency": "CHF"}`, true},
		{`{"amount": "12.505", "currency": "EUR"}`, false},
		{`{"amount": "12.", "currency": "EUR"}`, false},
		{`{"amount": ".5", "currency": "EUR"}`, false},
		{`{"amount": "1e3", "currency": "EUR"}`, false},
		{`{"amount": 12.5, "currency": "EUR"}`, false},
		{`{"amount": "12.50", "currency": "eur"}`, false},
		{`{"amount": "12.50", "currency": "EURO"}`, false},
		{`{"amount": "12.50"}`, false},
		{`{"currency": "EUR"}`, false},
		{`{"amount": "1", "currency": "EUR", "note": "x"}`, false},
		{`"12.50 EUR"`, false},
	}
	requireValid(t, s, tests)
}

func TestRegistrySchema(t *testing.T) {
	t.Parallel()
	s, err := schema.Compile("registry.schema.json")
	require.NoError(t, err)
	tests := []validCase{
		{`{"tools": []}`, true},
		{`{"$schema": "https://toolgate.dev/schema/registry.schema.json", "tools": []}`, true},
		{`{"sections": {"a": {"roles": ["x"]}}, "tools": [{"name": "t", "method": "m", "section": "a", "driver": "url",
			"arguments": [{"name": "a", "type": "int", "required": true, "description": "d", "enum": [1], "minimum": 0, "maximum": 2.5, "pattern": "x", "items": {}}],
			"annotations": {"readOnlyHint": true}}]}`, true},
		{`{"tools": [{"name": "t", "method": "upstream:srv/tool"}]}`, true},
		{`{"tools": [{"name": "t", "method": "upstream:srv"}]}`, false},
		{`{"tools": [{"name": "t", "method": "a b"}]}`, false},
		{`{"tools": [{"name": "t"}]}`, false},
		{`{"tools": [{"name": "", "method": "m"}]}`, false},
		{`{"tools": [{"name": "t", "method": "m", "driver": "file"}]}`, false},
		{`{"tools": [{"name": "t", "method": "m", "extra": 1}]}`, false},
		{`{"tools": [{"name": "t", "method": "m", "arguments": [{"name": "a", "type": "int", "extra": 1}]}]}`, false},
		{`{"tools": [{"name": "t", "method": "m", "arguments": [{"name": "a-b", "type": "int"}]}]}`, false},
		{`{"sections": {"a": {"roles": "x"}}, "tools": []}`, false},
		{`{"sections": {"a": {"roles": [], "x": 1}}, "tools": []}`, false},
		{`{}`, false},
	}
	requireValid(t, s, tests)
}

func TestCompileValue(t *testing.T) {
	t.Parallel()
	s, err := schema.CompileValue(map[string]any{
		"type":       "object",
		"properties": map[string]any{"price": map[string]any{"$ref": schema.BaseURL + "types/Money.json"}},
	})
	require.NoError(t, err, "a $ref to an embedded file resolves")
	require.NoError(t, s.Validate(map[string]any{"price": map[string]any{"amount": "1", "currency": "EUR"}}))
	require.Error(t, s.Validate(map[string]any{"price": map[string]any{"amount": "x", "currency": "EUR"}}))

	for _, ref := range []string{"file:///etc/passwd", "https://example.com/s.json", schema.BaseURL + "../x.json"} {
		_, err := schema.CompileValue(map[string]any{"$ref": ref})
		require.Error(t, err, ref)
		require.True(t, errors.Is(err, schema.ErrNotFound), "%s: %v", ref, err)
	}
	_, err = schema.CompileValue(map[string]any{"type": 5})
	require.Error(t, err)
}
