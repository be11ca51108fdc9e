package upstream

import (
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkRelayedCall: one governed call of a client to an upstream tool
// through the relay (the front over in-memory transports, the upstream
// over streamable HTTP in this process or over stdio), 8 calls in flight
// from one caller. The allocations are both sides of the hop, the
// upstream's too when it is in process. For profiles:
//
//	go test ./upstream -run '^$' -bench RelayedCall -benchmem -cpuprofile cpu.out -memprofile mem.out
func BenchmarkRelayedCall(b *testing.B) {
	for _, kind := range []string{"http", "stdio"} {
		b.Run(kind, func(b *testing.B) {
			var up Config
			if kind == "http" {
				up, _ = countingUpstream(b, "up")
			} else {
				up = stdioConfig("up")
			}
			p, err := NewPool([]Config{up}, &Options{TerminateGrace: 500 * time.Millisecond}) // the upstream's stderr discarded
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = p.Close() })
			f := newRelayFrontPool(b, p)
			cs, _ := f.connect("alice", nil)
			params := &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"ms": 0}}
			b.SetParallelism(4) // 8 in flight on 2 cores
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					res, err := cs.CallTool(b.Context(), params)
					if err != nil || res.IsError {
						b.Errorf("call: %v %+v", err, res)
						return
					}
				}
			})
		})
	}
}
