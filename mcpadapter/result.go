package mcpadapter

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// errResultShape: a toolgate.call result is not exactly a CallToolResult.
var errResultShape = errors.New("toolgate.call result is not a CallToolResult")

// policyResult reads data.toolgate.call.result, the JSON object a rule set,
// as the CallToolResult the caller receives. The SDK's decoding drops what
// it does not know: a misspelt "isErr" or "IsError" would answer a success,
// a content item's "txt" an empty text. So the result is decoded, encoded
// again and compared with what the rule said: anything the answer would not
// carry as written is a failure of the call rules (docs/contract.md §5: fail closed),
// never another answer. "content" is required; "isError": false is the same
// as no isError.
func policyResult(raw []byte) (*mcp.CallToolResult, error) {
	var res mcp.CallToolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("%w: %w", errResultShape, err)
	}
	var want map[string]any
	if err := json.Unmarshal(raw, &want); err != nil {
		return nil, fmt.Errorf("%w: %w", errResultShape, err)
	}
	if _, ok := want["content"]; !ok {
		return nil, fmt.Errorf("%w: it has no content", errResultShape)
	}
	if b, ok := want["isError"].(bool); ok && !b {
		delete(want, "isError")
	}
	again, err := json.Marshal(&res)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errResultShape, err)
	}
	var got map[string]any
	if err := json.Unmarshal(again, &got); err != nil {
		return nil, fmt.Errorf("%w: %w", errResultShape, err)
	}
	if !reflect.DeepEqual(want, got) {
		var diff []string
		for k := range want {
			if !reflect.DeepEqual(want[k], got[k]) {
				diff = append(diff, k)
			}
		}
		return nil, fmt.Errorf("%w: the answer would not carry %q as written (unknown or misspelt fields, or values of the wrong shape)", errResultShape, diff)
	}
	return &res, nil
}
