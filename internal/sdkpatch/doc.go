// Package sdkpatch holds the tests of the go-sdk change toolgate would
// like upstream (docs/patches/go-sdk-unmarshal.patch), kept here until the
// SDK takes it; toolgate builds against the SDK as released (no replace).
//
// The go-sdk's internal json.Unmarshal decodes through a streaming
// segmentio/encoding json.Decoder over a bytes.Reader, and that decoder
// allocates a 32 KiB read buffer for every value: every message, params,
// _meta entry and result the SDK reads. The patch parses the bytes it is
// given (segmentio's json.Parse with the same flag) instead. The tests
// check that the patch still applies to the go-sdk in go.mod, that both
// ways answer alike (a differential fuzzer over MCP messages), and the
// benchmarks show what it saves:
//
//	go test ./internal/sdkpatch -run '^$' -bench . -benchmem
package sdkpatch
