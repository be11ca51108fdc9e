package mcpadapter_test

import (
	"strings"
	"testing"
)

func TestZZScratch(t *testing.T) {
	g := newGoverned(t, setup{caller: fuzzCaller})
	for _, proto := range protocols {
		c := g.connectRaw(t, proto)
		for _, p := range []string{
			`{"name":"echo","arguments":{"text":"x","d":` + strings.Repeat("[", 990) + strings.Repeat("]", 990) + `}}`,
			`{"name":"echo","arguments":{"text":"x"},"_meta":{"io.modelcontextprotocol/protocolVersion":"21","io.modelcontextprotocol/clientCapabilities":{}}}`,
			`{"name":"echo","arguments":{"text":"x"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":1}}}`,
			`{"name":"echo","arguments":{"text":"x"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"Roots":1}}}`,
			`{"name":"echo","arguments":{"text":"x"},"_meta":{"io.modelcontextprotocol/clientInfo":{"name":1}}}`,
			`{"name":"echo","arguments":{"text":"x"},"_meta":{"io.modelcontextprotocol/clientInfo":null}}`,
			`{"name":"echo","arguments":{"text":"x"},"_meta":{"io.modelcontextprotocol/clientInfo":{"Name":1}}}`,
			`{"name":"echo","arguments":{"text":"x"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":null}}`,
			`{"name":"echo","arguments":{"text":"x"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-29","io.modelcontextprotocol/clientCapabilities":{}}}`,
			`{"name":"echo","arguments":{"text":"x"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-29","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":5}}`,
			`{"name":"echo","arguments":{"text":"x"},"_meta":{"io.modelcontextprotocol/logLevel":{"a":1},"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}`,
			`{"name":"echo","arguments":{"text":"x"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/protocolVersion":"9"}}`,
		} {
			resp := c.call(p)
			t.Logf("%s %.120s\n   -> %.300s", proto, p, resp)
		}
	}
}
