package registry

import "encoding/json"

// Prompt is a prompt imported from an upstream MCP server
// (docs/contract.md §16). A registry file cannot declare prompts: they are
// added to a Registry by whatever imports them (upstream.MergeImports),
// and governed like rows: the base decision follows Section, and
// data.toolgate.grant.prompts overrides it.
type Prompt struct {
	// Name is the prompt's name as toolgate serves it: the upstream's
	// prefix, then the upstream's own name.
	Name string `json:"name"`
	// Upstream is the upstream's name.
	Upstream string `json:"upstream"`
	// Prompt is the upstream's own name of the prompt (what prompts/get
	// sends it).
	Prompt string `json:"prompt"`
	// Section is the permission section (the upstream's; "" grants every
	// signed-in caller, like a row without one).
	Section string `json:"section,omitempty"`
	// Description is the upstream's description.
	Description string `json:"description,omitempty"`
	// Arguments are the prompt's arguments as the upstream lists them.
	Arguments []PromptArgument `json:"arguments,omitempty"`
	// Definition is the upstream's prompt definition as listed (JSON);
	// prompts/list shows it with Name as its name.
	Definition json.RawMessage `json:"definition,omitempty"`
}

// PromptArgument is one argument of an imported prompt.
type PromptArgument struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required"`
}

// PromptIndex returns the index of the prompt named name in r.Prompts, or
// -1.
func (r *Registry) PromptIndex(name string) int {
	for i := range r.Prompts {
		if r.Prompts[i].Name == name {
			return i
		}
	}
	return -1
}
