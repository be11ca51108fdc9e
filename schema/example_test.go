package schema_test

import (
	"fmt"

	"github.com/toolgate/toolgate/schema"
)

func ExampleCompile() {
	money, err := schema.Compile("types/Money.json")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(money.Validate(map[string]any{"amount": "12.50", "currency": "EUR"}) == nil)
	fmt.Println(money.Validate(map[string]any{"amount": "12.505", "currency": "EUR"}) == nil)
	fmt.Println(schema.TypeNames())
	// Output:
	// true
	// false
	// [Money]
}
