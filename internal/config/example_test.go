package config_test

import (
	"fmt"
	"io"

	"github.com/toolgate/toolgate/internal/config"
)

func ExampleLoadServe() {
	s, err := config.LoadServe([]string{"--stdio", "--as", "alice", "--role", "manager", "--ledger", "memory"}, io.Discard)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s.Stdio, s.HTTP == "", s.As, s.Roles, s.Ledger, s.Audit, s.WatchOn())
	// Output: true true alice [manager] memory - true
}
