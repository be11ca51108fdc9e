package httpserve_test

import (
	"fmt"

	"github.com/toolgate/toolgate/httpserve"
)

func ExampleHashToken() {
	// A tokens file lists the digest of each token, never the token.
	fmt.Printf("%s:\n  subject: alice\n  roles: [manager]\n", httpserve.HashToken("test"))
	// Output:
	// 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08:
	//   subject: alice
	//   roles: [manager]
}
