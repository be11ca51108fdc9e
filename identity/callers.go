package identity

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"gopkg.in/yaml.v3"

	"github.com/toolgate/toolgate/internal/fsx"
	"github.com/toolgate/toolgate/toolcall"
)

// LoadCallers reads a callers fixture file: a YAML or JSON list of
// {subject, roles, claims}, as `toolgate check --callers FILE` takes it.
// Its entries have the shape of a tokens file's values.
func LoadCallers(path string) ([]toolcall.Caller, error) {
	data, err := fsx.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("callers: %w", err)
	}
	cs, err := ParseCallers(data)
	if err != nil {
		return nil, fmt.Errorf("callers %s: %w", path, err)
	}
	return cs, nil
}

// ParseCallers decodes a callers fixture document (YAML, or JSON, which is
// YAML). Every entry needs a non-empty subject; roles and claims may be
// left out; any other key is refused, so a misspelt "role" is not silently
// a caller without roles.
func ParseCallers(data []byte) ([]toolcall.Caller, error) {
	var doc any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if doc == nil {
		return nil, errors.New("no callers")
	}
	// Through JSON, so the decoding rules are toolcall.Caller's own.
	enc, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(enc))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	var cs []toolcall.Caller
	if err := dec.Decode(&cs); err != nil {
		return nil, fmt.Errorf("want a list of {subject, roles, claims}: %w", err)
	}
	for i, c := range cs {
		if c.Subject == "" {
			return nil, fmt.Errorf("[%d]: subject is required", i)
		}
		if cs[i].Claims == nil {
			cs[i].Claims = map[string]any{}
		}
	}
	return cs, nil
}
