package gateway_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/toolcall"
	"github.com/toolgate/toolgate/upstream"
)

// sentTool is a tool as a newer server lists it: members the go-sdk's
// Tool does not hold (execution, one of a later revision), annotations
// that leave idempotentHint out, and <, > and & in a description.
const sentTool = `{"name":"sing","title":"Sing","description":"Sings <loud> & clear.",` +
	`"inputSchema":{"type":"object","properties":{"tune":{"type":"string"}}},` +
	`"execution":{"taskSupport":"optional"},"x-later":{"a":[1,2]},` +
	`"annotations":{"readOnlyHint":true,"openWorldHint":false}}`

// TestImportedToolsListedAsSent (docs/contract.md §19, "Definitions as
// listed"): an imported tool is listed as the upstream lists it, JSON-equal
// to its definition — execution and members toolgate does not know kept,
// annotations as declared (no hint the upstream left out written as
// false) — under toolgate's name; the annotations are the upstream's only
// when the upstream config trusts them (§15), else absent.
func TestImportedToolsListedAsSent(t *testing.T) {
	t.Parallel()
	upURL := rawUpstreamWith(t, map[string]string{"tools/list": `{"tools":[` + sentTool + `]}`}, nil)
	ann := &toolcall.Caller{Subject: "ann", Roles: []string{"admin"}}
	g := importGateway{callers: []*toolcall.Caller{ann}, ups: []upstream.Settings{
		{Name: "up", URL: upURL, Import: true, TrustAnnotations: true},
		{Name: "plain", URL: upURL, Import: true},
	}}.start(t)
	var want map[string]any
	require.NoError(t, json.Unmarshal([]byte(sentTool), &want))
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			cs, rec := recorded(t, g.url, proto, ann)

			_, err := cs.ListTools(context.Background(), nil)
			require.NoError(t, err)
			var listed struct {
				Tools []map[string]any `json:"tools"`
			}
			require.NoError(t, json.Unmarshal(resultIn(t, rec.take()), &listed))
			byName := map[string]map[string]any{}
			for _, tl := range listed.Tools {
				name, _ := tl["name"].(string)
				byName[name] = tl
			}

			trusted := map[string]any{}
			for k, v := range want {
				trusted[k] = v
			}
			trusted["name"] = "up.sing"
			assert.Equal(t, trusted, byName["up.sing"], "trusted: the definition as sent, under toolgate's name")

			untrusted := map[string]any{}
			for k, v := range trusted {
				untrusted[k] = v
			}
			untrusted["name"] = "plain.sing"
			delete(untrusted, "annotations")
			assert.Equal(t, untrusted, byName["plain.sing"], "untrusted: the definition as sent, without its annotations")
		})
	}
}
