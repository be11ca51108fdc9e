package main

import "github.com/toolgate/toolgate/internal/server/gateway"

// builtinMethods returns the Go tool methods compiled into the binary: what
// `toolgate check` checks rows against, the list `toolgate serve` serves
// (gateway.BuiltinMethods). A variable, so tests can swap it.
var builtinMethods = gateway.BuiltinMethods
