package mcpadapter_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestUnsupportedProtocolVersionIsAProtocolFault pins the input that
// once turned CI red: a tools/call whose reserved _meta
// names protocol version "21" (which sorts after 2026-07-28, so the go-sdk
// validates the request's own revision keys) is the go-sdk's own JSON-RPC
// error -32022, identical for a hidden and an absent name, never reaching
// the pipeline; the fuzz oracle (expectFaults) allows exactly that error
// for it, and the input and its neighbours are seeds of the fuzzers
// (testdata/fuzz/*/handshake-*).
func TestUnsupportedProtocolVersionIsAProtocolFault(t *testing.T) {
	t.Parallel()
	g := newGoverned(t, setup{caller: fuzzCaller})
	c := g.connectRaw(t, proto20250618) // the session's revision; the _meta names its own
	params := func(name string) string {
		return `{"name":"` + name + `","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"21","io.modelcontextprotocol/clientCapabilities":{}}}`
	}
	hid := normaliseID(c.call(params(fuzzHidden)))
	abs := normaliseID(c.call(params(fuzzAbsent)))
	require.Equal(t, string(abs), string(bytes.ReplaceAll(hid, []byte(fuzzHidden), []byte(fuzzAbsent))), "hidden ≡ absent for a protocol fault")

	var resp struct {
		Error *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(abs, &resp))
	require.NotNil(t, resp.Error, "a JSON-RPC error: %s", abs)
	require.Equal(t, -32022, resp.Error.Code)
	require.NotRegexp(t, leaks, string(abs))
	require.Empty(t, g.after.outcomes(), "a protocol fault never reaches the pipeline")

	f := expectFaults(proto20250618, []byte(params(fuzzAbsent)))
	require.False(t, f.noFault, "the oracle expects the fault")
	require.True(t, f.allows(rpcError(abs)), "the oracle allows exactly this error: %s", abs)
}
