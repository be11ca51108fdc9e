package registry_test

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/toolgate/toolgate/registry"
)

func ExampleLoad() {
	r, err := registry.Load("testdata/registry/valid.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	tool := r.Tool("getReward")
	fmt.Println(tool.Method, tool.Section)
	schema, _ := json.Marshal(tool.InputSchema())
	fmt.Println(string(schema))

	_, err = registry.Load("testdata/registry/five-mistakes.yaml")
	var invalid *registry.ValidationError
	if errors.As(err, &invalid) {
		for _, p := range invalid.Problems {
			fmt.Println(p)
		}
	}
	// Output:
	// demo.getReward rewards
	// {"properties":{"idReward":{"description":"Reward id","minimum":1,"type":"integer"},"note":{"default":"","pattern":"^[a-z ]*$","type":"string"}},"required":["idReward"],"type":"object"}
	// tools[0] (getReward): arguments[0].type: unknown type "Mony" (did you mean "Money"?)
	// tools[1] (echo): missing required field "method"
	// tools[2] (getReward): name: duplicate tool name "getReward" (also tools[0])
	// tools[3] (add): arguments[0]: required: true and default exclude each other (an argument with a default is never missing)
	// tools[4] (count): unknown field "descripton" (did you mean "description"?)
}
