package main

import (
	"github.com/toolgate/toolgate/demo"
	"github.com/toolgate/toolgate/mcpadapter"
)

// builtinMethods returns the Go tool methods compiled into the binary: what
// rows of a registry served by `toolgate serve` dispatch to, and what
// `toolgate check` checks rows against. A variable, so tests can swap it.
var builtinMethods = func() mcpadapter.MethodSet { return demo.Methods() }
